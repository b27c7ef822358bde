/* fiber_x86_64.S — the emulated device's context switch (fiber.cc): saves
 * the callee-saved registers and the floating-point control words on the
 * current stack, stores its pointer, and resumes the other stack. No system
 * call (glibc's swapcontext makes two per switch, to save the signal mask,
 * which fibers of one kernel never change).
 *
 *   void emu_fiber_switch(void **save, void *to);
 *
 * A new fiber's stack is laid out by fiber.cc as if it had switched away
 * inside emu_fiber_start: rbx holds the argument, r12 the function. */
    .text
    .globl emu_fiber_switch
    .hidden emu_fiber_switch
    .type emu_fiber_switch, @function
emu_fiber_switch:
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
    .size emu_fiber_switch, .-emu_fiber_switch

    .globl emu_fiber_start
    .hidden emu_fiber_start
    .type emu_fiber_start, @function
emu_fiber_start:
    movq %rbx, %rdi
    callq *%r12
    ud2                         /* the function never returns: it switches away for good */
    .size emu_fiber_start, .-emu_fiber_start

    .section .note.GNU-stack, "", @progbits
