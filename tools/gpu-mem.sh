# tools/gpu-mem.sh: sourced by the bench scripts: the GPU memory one gst-launch-1.0 run takes (POSIX sh)
# gpu_mem_mib PIPELINE...: runs `gst-launch-1.0 -q PIPELINE...` and prints, in MiB, the largest
# of nvidia-smi's samples (every 0.1 s) of that process's GPU memory, CUDA context included.
gpu_mem_mib() {
  gst-launch-1.0 -q "$@" > /tmp/gvc-gpu-mem.log 2>&1 &
  gpu_mem_pid=$! gpu_mem_max=0
  while kill -0 "$gpu_mem_pid" 2>/dev/null; do
    gpu_mem_m=$(nvidia-smi --query-compute-apps=pid,used_memory --format=csv,noheader,nounits 2>/dev/null |
                awk -F', ' -v p="$gpu_mem_pid" '$1 == p {print $2}')
    [ -n "$gpu_mem_m" ] && [ "$gpu_mem_m" -gt "$gpu_mem_max" ] && gpu_mem_max=$gpu_mem_m
    sleep 0.1
  done
  wait "$gpu_mem_pid"
  echo "$gpu_mem_max"
}
