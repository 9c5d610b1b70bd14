#include <exception>
#include <stdexcept>

#include "kernels/cuda/cuda_check.cuh"
#include "kernels/cuda/graph_replay.cuh"

namespace heatsolve::cuda {

namespace {

// A slot's recording: the work's graph, instantiated at its second call (or ahead of its
// first: GraphReplayer::prerecord).
struct GraphRecording final : Recording {
  cudaGraphExec_t exec = nullptr;
  int calls = 0;
  bool unrecordable = false;
  GraphRecording() = default;
  GraphRecording(const GraphRecording&) = delete;
  GraphRecording& operator=(const GraphRecording&) = delete;
  ~GraphRecording() override {
    if (exec) cudaGraphExecDestroy(exec);
  }
};

GraphRecording* slot_recording(std::unique_ptr<Recording>* slot) {
  if (!*slot) *slot = std::make_unique<GraphRecording>();
  auto* r = dynamic_cast<GraphRecording*>(slot->get());
  if (!r) throw std::logic_error("replay: a recording of another backend");
  return r;
}

}  // namespace

GraphReplayer::~GraphReplayer() {
  if (record_stream_) cudaStreamDestroy(record_stream_);
}

bool GraphReplayer::capture(const std::function<void()>& work, cudaGraphExec_t* exec) {
  if (!record_stream_) CUDA_CHECK(cudaStreamCreateWithFlags(&record_stream_, cudaStreamDefault));
  const cudaStream_t main = *stream_;
  CUDA_CHECK(cudaStreamBeginCapture(record_stream_, cudaStreamCaptureModeThreadLocal));
  *stream_ = record_stream_;
  recording_ = true;
  bool ok = true;
  try {
    work();
  } catch (const std::exception&) {  // a call that cannot be recorded
    ok = false;
  }
  *stream_ = main;
  recording_ = false;
  cudaGraph_t graph = nullptr;
  ok = cudaStreamEndCapture(record_stream_, &graph) == cudaSuccess && ok && graph;
  if (ok) ok = cudaGraphInstantiate(exec, graph, 0) == cudaSuccess;
  if (graph) cudaGraphDestroy(graph);
  if (!ok) {
    (void)cudaGetLastError();  // the refusal's error (not sticky)
    *exec = nullptr;
  }
  return ok;
}

bool GraphReplayer::replay(std::unique_ptr<Recording>* slot, const std::function<void()>& work) {
  GraphRecording* r = slot_recording(slot);
  if (recording_) {  // inside another recording: part of it
    work();
    return false;
  }
  if (!r->exec) {
    // The first call runs as is; the second is recorded (refused: as is, from then on).
    const bool first = r->calls++ == 0;
    if (r->unrecordable || first || !capture(work, &r->exec)) {
      if (!first) r->unrecordable = true;
      work();
      return false;
    }
  }
  CUDA_CHECK(cudaGraphLaunch(r->exec, *stream_));
  return true;
}

bool GraphReplayer::prerecord(std::unique_ptr<Recording>* slot, const std::function<void()>& work) {
  GraphRecording* r = slot_recording(slot);
  if (r->exec) return true;
  if (recording_ || r->unrecordable || r->calls == 0) return false;
  if (capture(work, &r->exec)) return true;
  r->unrecordable = true;  // as replay() would have found at the second call
  return false;
}

}  // namespace heatsolve::cuda
