// hd.h: marks code compiled for both the CPU and CUDA devices, and constant tables both can read
//
// Code that must give the same bits on the CPU and GPU backends (the H.264 encoder's
// reconstruction and deblocking) is written once, in headers, with GVC_HD functions: g++
// compiles it as plain inline C++, nvcc for host and device.
//
// A table read by GVC_HD code is declared with GVC_TABLE(type, name, dims, {values}) and read
// with GVC_T(name)[i]...: host code reads the constexpr host copy, device code a __constant__
// copy made from the same initialiser (CUDA cannot read host arrays, and declarations must not
// depend on __CUDA_ARCH__, so both copies exist in a .cu translation unit).
#pragma once

#if defined(__CUDACC__)
#define GVC_HD __host__ __device__ inline
#define GVC_TABLE(type, name, dims, ...)          \
  [[maybe_unused]] static constexpr type name dims = __VA_ARGS__; \
  [[maybe_unused]] static __constant__ type name##_dev dims = __VA_ARGS__;
#else
#define GVC_HD inline
#define GVC_TABLE(type, name, dims, ...) static constexpr type name dims = __VA_ARGS__;
#endif

#if defined(__CUDA_ARCH__)
#define GVC_T(name) (name##_dev)
#else
#define GVC_T(name) (name)
#endif
