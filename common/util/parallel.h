// parallel.h: parallel loops on a process-wide pool of kept threads (starting threads every frame costs more than the work on some hosts)
#pragma once

#include <functional>

namespace gvc {

// Runs fn(i) for every i in [0, n) on the pool's threads and the calling one, and returns when
// every call has returned. Calls from several threads at once share the workers, and a loop
// may run inside another: the caller always works on its own loop, so every loop progresses.
// Indices are started in increasing order, but how many run at once is not known: fn(i) may
// wait for an fn(j) with j < i (which has started), never for one with j > i.
void parallel_for(int n, const std::function<void(int)>& fn);

// The number of threads parallel_for may use: the caller's and the workers'.
int parallel_threads();

}  // namespace gvc
