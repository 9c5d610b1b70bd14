// SHA-256 (FIPS 180-4) of a byte string, as 64 lowercase hex digits: the deck's fingerprint
// in summary.json (sha256sum of the deck file gives the same digits).
#pragma once

#include <string>
#include <string_view>

namespace heatsolve {

std::string sha256_hex(std::string_view bytes);

}  // namespace heatsolve
