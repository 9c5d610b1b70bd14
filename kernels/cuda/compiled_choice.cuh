// Runtime choice among compiled template instances: the tuned kernels (modern reduction,
// tall-skinny GEMM) keep their compiled candidates in a constexpr array and are launched
// through the instance whose parameters equal a runtime configuration.
#pragma once

#include <cstddef>
#include <type_traits>
#include <utility>

namespace heatsolve::cuda::detail {

template <class Match, class F, std::size_t... I>
bool with_compiled_index_impl(Match& match, F& f, std::index_sequence<I...>) {
  return ((match(I) && (f(std::integral_constant<std::size_t, I>{}), true)) || ...);
}

// Calls f(std::integral_constant<std::size_t, I>{}) for the first I < N with match(I); returns
// false if there is none. The caller turns I into its template instance
// (kCandidates[decltype(i)::value] is a constant expression).
template <std::size_t N, class Match, class F>
bool with_compiled_index(Match&& match, F&& f) {
  return with_compiled_index_impl(match, f, std::make_index_sequence<N>{});
}

}  // namespace heatsolve::cuda::detail
