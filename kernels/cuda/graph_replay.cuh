// Backend::replay on the device: work recorded once as a CUDA graph and replayed as one launch.
#pragma once

#include <cuda_runtime.h>

#include <functional>
#include <memory>

#include "kernels/backend.hpp"

namespace heatsolve::cuda {

// One backend's recordings. The backend queues its work on *stream (its main stream, the
// legacy default one); while a call is recorded, *stream is a blocking stream of this
// replayer's own in capture mode (this thread's calls only), so that work queued on the
// legacy stream by mistake is an error, and the work then runs unrecorded, not an unordered
// launch.
class GraphReplayer {
 public:
  explicit GraphReplayer(cudaStream_t* stream) : stream_(stream) {}
  ~GraphReplayer();
  GraphReplayer(const GraphReplayer&) = delete;
  GraphReplayer& operator=(const GraphReplayer&) = delete;

  // Backend::replay's contract.
  bool replay(std::unique_ptr<Recording>* slot, const std::function<void()>& work);
  // Backend::prerecord's contract.
  bool prerecord(std::unique_ptr<Recording>* slot, const std::function<void()>& work);

 private:
  // Captures work on record_stream_ into exec (nothing runs); false, exec null and the
  // refusal's error cleared, where some call of work cannot be recorded.
  bool capture(const std::function<void()>& work, cudaGraphExec_t* exec);

  cudaStream_t* stream_;
  cudaStream_t record_stream_ = nullptr;  // created at the first recording
  bool recording_ = false;
};

}  // namespace heatsolve::cuda
