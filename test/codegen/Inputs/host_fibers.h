// Fibers for the host emulation's GPU threads (cuda_host_shim.h): a stack
// each, switched on one OS thread. glibc's swapcontext saves and restores
// the signal mask with a system call at every switch, which was two thirds
// of an emulated BERT train step; on x86-64 a switch here only saves the
// callee-saved registers and the FP control words on the old stack and
// moves the stack pointer, as Boost.Context's does. Other machines use
// ucontext. A fiber's entry function never returns: it ends by switching
// away for the last time.
#pragma once
#include <cstddef>
#include <cstdint>

#if defined(__x86_64__)
// mpc_context_swap(&save, to): pushes rbp, rbx, r12-r15 and the MXCSR and
// x87 control words, stores the stack pointer in *save, then pops the same
// from `to` and returns into the fiber that saved it (or, the first time,
// into its entry function). Weak: more than one translation unit of a
// program may include this header.
extern "C" void mpc_context_swap(void **save, void *to);
asm(R"(
  .text
  .weak mpc_context_swap
  .hidden mpc_context_swap
  .type mpc_context_swap, @function
mpc_context_swap:
  pushq %rbp
  pushq %rbx
  pushq %r12
  pushq %r13
  pushq %r14
  pushq %r15
  subq $8, %rsp
  stmxcsr (%rsp)
  fnstcw 4(%rsp)
  movq %rsp, (%rdi)
  movq %rsi, %rsp
  ldmxcsr (%rsp)
  fldcw 4(%rsp)
  addq $8, %rsp
  popq %r15
  popq %r14
  popq %r13
  popq %r12
  popq %rbx
  popq %rbp
  ret
  .size mpc_context_swap, .-mpc_context_swap
)");

struct MpcContext {
  void *sp = nullptr;
};

/// Lays out `stack` as mpc_context_swap leaves a suspended fiber: the
/// control words, six zero registers, then `entry` as the return address,
/// placed so that `entry` starts with the stack aligned as after a call.
inline void mpc_context_init(MpcContext &c, char *stack, size_t size,
                             void (*entry)()) {
  auto top = (uintptr_t)(stack + size) & ~(uintptr_t)15;
  auto *slot = (uint64_t *)top;
  *--slot = 0;                // entry's return address: it never returns
  *--slot = (uint64_t)entry;  // at a 16-byte boundary, as a call leaves it
  for (int i = 0; i < 6; ++i) // rbp, rbx, r12-r15
    *--slot = 0;
  uint32_t mxcsr;
  uint16_t fpucw;
  asm volatile("stmxcsr %0" : "=m"(mxcsr));
  asm volatile("fnstcw %0" : "=m"(fpucw));
  *--slot = (uint64_t)mxcsr | (uint64_t)fpucw << 32;
  c.sp = slot;
}
inline void mpc_context_switch(MpcContext &from, MpcContext &to) {
  mpc_context_swap(&from.sp, to.sp);
}
#else
#include <ucontext.h>

struct MpcContext {
  ucontext_t uc;
};
inline void mpc_context_init(MpcContext &c, char *stack, size_t size,
                             void (*entry)()) {
  getcontext(&c.uc);
  c.uc.uc_stack.ss_sp = stack;
  c.uc.uc_stack.ss_size = size;
  c.uc.uc_link = nullptr;
  makecontext(&c.uc, entry, 0);
}
inline void mpc_context_switch(MpcContext &from, MpcContext &to) {
  swapcontext(&from.uc, &to.uc);
}
#endif
