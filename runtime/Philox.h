//===- Philox.h - dropout's random numbers, CPU and CUDA ---------*- C++ -*-===//
//
// Dropout draws from Philox4x32-10 (Salmon et al., "Parallel Random
// Numbers: As Easy as 1, 2, 3", SC 2011; cuRAND's and PyTorch's CUDA
// generator): four 32-bit numbers as a pure function of a 128-bit counter
// and a 64-bit key. No state: element i of a mask is the same number
// whichever thread, block or backend draws it, and a CUDA graph replays
// a step without a generator to advance.
//
// A mask's key is (seed, stream): the Dropout's seed attribute (0 when
// absent) and its stream (the importer's hash of the node's output name).
// Its counter is (i / 4, step): element i takes word i % 4 of group i / 4,
// and step is the train step's number (mpc-dropout-steps), so each step
// draws a new mask. A data-parallel rank r numbers its n elements from
// r n, as one process over the global batch would. An element is kept
// when its word is at least ratio * 2^32 (mpc_dropout_threshold):
// probability 1 - ratio to 2^-32.
// The fused attention kernels draw element by element (mpc_dropout_keep)
// or by pairs (mpc_dropout_keep2) where their fragments hold pairs.
// mpc.random (RandomUniform/RandomNormal) draws with the same key and
// counter: a uniform number an element from its word, a normal one by
// Box-Muller over a group an element.
//
// The CPU kernel calls these functions; the CUDA emitter writes the same
// text into every kernels.cu that draws (kPhiloxSource), as Formulas.h
// does for the elementwise ops.
//
//===----------------------------------------------------------------------===//

#ifndef MPC_RUNTIME_PHILOX_H
#define MPC_RUNTIME_PHILOX_H

#include <math.h>

// clang-format off
#define MPC_PHILOX_CODE(Q)                                                     \
  /* The 4 words of group `group` of stream (seed, stream) at `step`. */      \
  Q void mpc_philox_words(unsigned long long seed, unsigned int stream,       \
                          unsigned long long step, unsigned long long group,  \
                          unsigned int w[4]) {                                \
    unsigned int c0 = (unsigned int)group, c1 = (unsigned int)(group >> 32);  \
    unsigned int c2 = (unsigned int)step, c3 = (unsigned int)(step >> 32);    \
    unsigned int k0 = (unsigned int)seed ^ (unsigned int)(seed >> 32);       \
    unsigned int k1 = stream;                                                 \
    for (int r = 0; r < 10; ++r) {                                            \
      unsigned long long p0 = 0xD2511F53ull * c0, p1 = 0xCD9E8D57ull * c2;   \
      unsigned int n0 = (unsigned int)(p1 >> 32) ^ c1 ^ k0;                   \
      unsigned int n2 = (unsigned int)(p0 >> 32) ^ c3 ^ k1;                   \
      c1 = (unsigned int)p1;                                                  \
      c3 = (unsigned int)p0;                                                  \
      c0 = n0;                                                                \
      c2 = n2;                                                                \
      k0 += 0x9E3779B9u;                                                      \
      k1 += 0xBB67AE85u;                                                      \
    }                                                                         \
    w[0] = c0; w[1] = c1; w[2] = c2; w[3] = c3;                               \
  }                                                                           \
  /* Words at or above this are kept: ratio * 2^32, 2^32 (none) at 1. */      \
  Q unsigned long long mpc_dropout_threshold(float ratio) {                   \
    return ratio <= 0.0f ? 0ull                                               \
           : ratio >= 1.0f ? 4294967296ull                                    \
                           : (unsigned long long)((double)ratio * 4294967296.0);\
  }                                                                           \
  /* What a kept element is multiplied by: 1 / (1 - ratio), in FP32. */      \
  Q float mpc_dropout_scale(float ratio) { return 1.0f / (1.0f - ratio); }    \
  /* Whether element `i` is kept (the word picked without indexing the      \
     array by a variable, which would put it in CUDA local memory). */        \
  Q bool mpc_dropout_keep(unsigned long long seed, unsigned int stream,       \
                          unsigned long long step, unsigned long long i,      \
                          unsigned long long threshold) {                     \
    unsigned int w[4];                                                        \
    mpc_philox_words(seed, stream, step, i >> 2, w);                          \
    unsigned int lo = (i & 1) ? w[1] : w[0], hi = (i & 1) ? w[3] : w[2];      \
    return ((i & 2) ? hi : lo) >= threshold;                                  \
  }                                                                           \
  /* Whether elements i and i + 1 are kept, i even: one group for both. */    \
  Q void mpc_dropout_keep2(unsigned long long seed, unsigned int stream,      \
                           unsigned long long step, unsigned long long i,     \
                           unsigned long long threshold, bool keep[2]) {      \
    unsigned int w[4];                                                        \
    mpc_philox_words(seed, stream, step, i >> 2, w);                          \
    keep[0] = ((i & 2) ? w[2] : w[0]) >= threshold;                           \
    keep[1] = ((i & 2) ? w[3] : w[1]) >= threshold;                           \
  }                                                                           \
  /* mpc.random's uniform number of a word: its top 24 bits times 2^-24, */  \
  /* in [0, 1), exact in FP32. */                                             \
  Q float mpc_random_unit(unsigned int word) {                                \
    return (float)(word >> 8) * 5.9604644775390625e-8f;                       \
  }                                                                           \
  /* Element i's uniform number: word i % 4 of group i / 4, as dropout. */   \
  Q float mpc_random_uniform(unsigned long long seed, unsigned int stream,    \
                             unsigned long long step, unsigned long long i) { \
    unsigned int w[4];                                                        \
    mpc_philox_words(seed, stream, step, i >> 2, w);                          \
    unsigned int lo = (i & 1) ? w[1] : w[0], hi = (i & 1) ? w[3] : w[2];      \
    return mpc_random_unit((i & 2) ? hi : lo);                                \
  }                                                                           \
  /* Element i's standard normal number: Box-Muller over words 0 and 1 of */ \
  /* group i (u1 in (0, 1], so the log is finite). */                         \
  Q float mpc_random_normal(unsigned long long seed, unsigned int stream,     \
                            unsigned long long step, unsigned long long i) {  \
    unsigned int w[4];                                                        \
    mpc_philox_words(seed, stream, step, i, w);                               \
    float u1 = mpc_random_unit(w[0]) + 5.9604644775390625e-8f;                \
    float u2 = mpc_random_unit(w[1]);                                         \
    return sqrtf(-2.0f * logf(u1)) * cosf(6.28318530717958648f * u2);         \
  }
// clang-format on

#define MPC_PHILOX_STRING(...) #__VA_ARGS__
#define MPC_PHILOX_TEXT(...) MPC_PHILOX_STRING(__VA_ARGS__)

/// Host definitions: mpc::philox::mpc_philox_words(...).
namespace mpc::philox {
MPC_PHILOX_CODE(inline)
} // namespace mpc::philox

/// The same definitions as CUDA source.
inline constexpr const char *kPhiloxSource =
    "// Dropout's Philox4x32-10 (runtime/Philox.h, shared with the CPU).\n" //
    MPC_PHILOX_TEXT(MPC_PHILOX_CODE(__device__ __forceinline__)) "\n";

#endif // MPC_RUNTIME_PHILOX_H
