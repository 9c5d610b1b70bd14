// `heatsolve info`: build features and GPU.
#pragma once

namespace heatsolve {

int info_command();

}  // namespace heatsolve
