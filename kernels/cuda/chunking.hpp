// Host-side launch arithmetic of the streaming rungs and temporal blocking: how many planes of
// the stream axis each block takes (plain C++: unit-tested without a device).
#pragma once

#include <algorithm>
#include <cmath>

namespace heatsolve::cuda {

inline int cdiv(int a, int b) {
  return (a + b - 1) / b;
}

// Planes per block for the streaming rungs when the caller gives none: about `blocks` blocks
// in all, but at least 16 planes each (each block re-reads two planes).
inline int auto_chunk(int tiles, int ns, int blocks) {
  const int want = std::max(1, cdiv(blocks, std::max(tiles, 1)));
  const int most = std::max(1, cdiv(ns, 16));
  const int chunks = std::min(want, most);
  return cdiv(ns, chunks);
}

// Planes per block from the rounds the blocks run in (temporal, 2D 2.5d-tma): `tiles` x
// chunks blocks run in rounds of `slots` resident blocks (blocks per SM x SMs), and a block
// streams its chunk plus `extra` planes (pipeline fill, recomputed neighbours). Among chunks
// of at least `min_chunk` planes, picks the best score = (w / ceil(w)) x chunk / (chunk +
// extra), w = blocks / slots: the last round's fill times the useful share of the streamed
// planes; chunks that make w >= 6 rounds come first. Why (docs/performance.md, session 5,
// H200): at 512^3 the chunk moved temporal k = 2 float between 1.08x and 1.23x roof (full
// last rounds win; with few rounds the slower face blocks end the pass unevenly even when the
// last round is full), and 2D double 2.5d-tma between 78 % and 93 % of copy.
inline int wave_chunk(int tiles, int ns, int slots, int extra, int min_chunk) {
  constexpr double kMinRounds = 6;
  int best_chunk = ns;
  double best = -1;
  bool best_enough = false;
  for (int c = 1; c <= ns; ++c) {
    const int chunk = cdiv(ns, c);
    if (cdiv(ns, chunk) != c) continue;  // the same chunk as a smaller c
    if (chunk < min_chunk && c > 1) break;
    const double w = double(tiles) * c / std::max(slots, 1);
    const double score = w / std::ceil(w) * chunk / double(chunk + extra);
    const bool enough = w >= kMinRounds;
    if ((enough && !best_enough) || (enough == best_enough && score > best)) {
      best = score;
      best_chunk = chunk;
      best_enough = enough;
    }
  }
  return best_chunk;
}

}  // namespace heatsolve::cuda
