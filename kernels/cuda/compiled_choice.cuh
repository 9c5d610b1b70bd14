// The one dispatch mechanism from a runtime configuration to a compiled template instance.
// Each tuned kernel family keeps its compiled configurations in a constexpr table of named
// policies and is launched through the row that equals the runtime request: the stencil ladder
// (kStencilPolicies, core/stencil_policies.hpp), the temporal passes (kTemporalPolicies,
// kernels/stencil/temporal_policies.hpp), the modern reduction (kModernCandidates) and the
// tall-skinny GEMM (kTsCandidates). The row index is a compile-time constant inside f, so
// table[decltype(i)::value] is a constant expression whose fields are template arguments.
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
