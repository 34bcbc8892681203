/* Reset and fault handling for aot firmware on Cortex-M: copy .data, zero .bss, enable the
 * FPU where there is one, paint the stack (to measure its use), call main, exit through
 * semihosting with main's status. A fault exits with status 100 + the exception number. */
#include <stdint.h>
#include "semihost.h"

extern uint32_t _sidata, _sdata, _edata, _sbss, _ebss, _stack_bottom, _estack;
int main(void);
void SysTick_Handler(void);

#define STACK_PAINT 0xC5C5C5C5u
#define SCB_CPACR (*(volatile uint32_t*)0xE000ED88u)
#define SCB_ICSR (*(volatile uint32_t*)0xE000ED04u)

void Reset_Handler(void) __attribute__((noreturn));
void Fault_Handler(void) __attribute__((noreturn));

static void __attribute__((noinline)) paint_stack(void) {
  uint32_t* p = &_stack_bottom;
  uint32_t* top = (uint32_t*)__builtin_frame_address(0) - 16;
  while (p < top) {
    *p++ = STACK_PAINT;
  }
}

uint32_t aot_stack_used(void) {
  const uint32_t* p = &_stack_bottom;
  while (p < &_estack && *p == STACK_PAINT) {
    ++p;
  }
  return (uint32_t)((uintptr_t)&_estack - (uintptr_t)p);
}

void Reset_Handler(void) {
  uint32_t* src = &_sidata;
  uint32_t* dst = &_sdata;
  while (dst < &_edata) {
    *dst++ = *src++;
  }
  for (dst = &_sbss; dst < &_ebss; ++dst) {
    *dst = 0;
  }
#if defined(__ARM_FP) || defined(__ARM_FEATURE_MVE)
  SCB_CPACR |= 0xFu << 20;   /* CP10 and CP11: full access */
  __asm__ volatile("dsb\n\tisb" ::: "memory");
#endif
  paint_stack();
  aot_sh_exit(main());
}

/* the exit status alone names the exception: a handler this shallow keeps the stack bound's
 * allowance for faults (one frame per level that can preempt) small */
void Fault_Handler(void) {
  aot_sh_exit(100 + (int)(SCB_ICSR & 0x1FFu));
}

typedef void (*vector_t)(void);

__attribute__((section(".vectors"), used)) static const vector_t vectors[16] = {
    (vector_t)(uintptr_t)&_estack, Reset_Handler, Fault_Handler, Fault_Handler, Fault_Handler, Fault_Handler,
    Fault_Handler, Fault_Handler, 0, 0, 0, Fault_Handler, Fault_Handler, 0, Fault_Handler, SysTick_Handler,
};
