// How many planes of the stream axis each block of a streaming rung or of temporal blocking
// takes when the caller gives none (bz = 0, chunk = 0): the measured choices of
// docs/performance.md ("Planes per block") in one place. Plain C++: unit-tested without a
// device. `tiles`: tiles of the plane; `slots`: resident blocks of the kernel instance (blocks
// per SM x SMs).
#pragma once

#include <algorithm>
#include <cmath>

namespace heatsolve::cuda {

inline int cdiv(int a, int b) {
  return (a + b - 1) / b;
}

// The rule of the rungs without a measured one (2.5d, 2.5d-single-slice, 3D 2.5d-register):
// about `blocks` blocks in all, but at least 16 planes each (each block re-reads two planes).
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
// planes; chunks that make w >= 6 rounds come first. Why: at 512^3 the chunk alone moves a
// temporal pass by up to 15 % and 2D double 2.5d-tma by up to 20 % (full last rounds win;
// with few rounds the slower face blocks end the pass unevenly even when the last round is
// full).
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

// At most one round of resident blocks when the tiles alone do not fill the device: every
// block streams as long a chunk as possible (fewest re-staged planes, no tail round), but at
// least 16 planes; auto_chunk when the tiles fill the slots. 2.5d-async and 3D float 2.5d-tma.
inline int one_round_chunk(int tiles, int ns, int slots, int sms) {
  if (tiles >= slots) return auto_chunk(tiles, ns, 16 * sms);
  return cdiv(ns, std::max(1, std::min(slots / std::max(tiles, 1), cdiv(ns, 16))));
}

// 2.5d-tma. 3D float: one round of long chunks (512^3, default 256 x 32 tiles: 4 chunks of
// 128 planes, 128 blocks for 132 SMs): the fewest planes re-read from L2. Under sustained load
// the board reaches its 700 W cap and lowers the SM clock, and a kernel that re-reads more
// from L2 (flatter tiles, shorter chunks) slows with it (docs/performance.md, "Power"); at
// 256 planes half the SMs idle. 3D double (one block per SM): 32 planes, which fill the last
// round of blocks (partly empty last rounds cost 5-9 %). 2D: a staged plane is one row, and
// short chunks lose to the per-block start: the wave-aware rule.
inline int tma_chunk(int dims, int elem_bytes, int tiles, int ns, int slots, int sms) {
  if (dims == 3) return elem_bytes == 4 ? one_round_chunk(tiles, ns, slots, sms) : 32;
  return wave_chunk(tiles, ns, slots, 2, 32);
}

// 2.5d-register. 2D: short chunks of rows, for 2.5d-tma's reason: at 8192^2, 10-12 rows run
// about 20 % faster than auto_chunk's 63, in both precisions. In 3D the gain was small in
// float and not steady in double: auto_chunk.
inline int register_chunk(int dims, int tiles, int ns, int sms) {
  return dims == 2 ? 12 : auto_chunk(tiles, ns, 16 * sms);
}

// Temporal blocking, K steps per pass: a block iterates over its chunk plus 2K planes (the
// stages fill and drain); chunks of at least max(32, 4K) planes, or max(16, 4K) where those
// leave resident slots empty: a 2-GPU block's 256 x 256 x 136 level (100 tiles, 264 slots)
// took 2 chunks of 68 planes, 200 blocks, and 68 SMs streamed two of them; 5 chunks of 28
// put at most 4 x 34 planes on an SM instead of 2 x 74.
inline int temporal_chunk(int k, int tiles, int ns, int slots) {
  const int chunk = wave_chunk(tiles, ns, slots, 2 * k, std::max(32, 4 * k));
  if (tiles * cdiv(ns, chunk) >= slots) return chunk;
  return wave_chunk(tiles, ns, slots, 2 * k, std::max(16, 4 * k));
}

}  // namespace heatsolve::cuda
