/* Semihosting calls and the SysTick instruction counter. */
#include "semihost.h"

#define SYS_OPEN 0x01
#define SYS_CLOSE 0x02
#define SYS_WRITE0 0x04
#define SYS_WRITE 0x05
#define SYS_READ 0x06
#define SYS_EXIT_EXTENDED 0x20
#define ADP_STOPPED_APPLICATION_EXIT 0x20026

static int sh_call(int op, void* arg) {
  register int r0 __asm__("r0") = op;
  register void* r1 __asm__("r1") = arg;
  __asm__ volatile("bkpt 0xab" : "+r"(r0) : "r"(r1) : "memory");
  return r0;
}

static size_t str_len(const char* s) {
  size_t n = 0;
  while (s[n] != '\0') {
    ++n;
  }
  return n;
}

int aot_sh_open(const char* path, int write) {
  uint32_t args[3];
  args[0] = (uint32_t)(uintptr_t)path;
  args[1] = write ? 6u : 1u;   /* "wb" : "rb" */
  args[2] = (uint32_t)str_len(path);
  return sh_call(SYS_OPEN, args);
}

int aot_sh_read(int fd, void* buf, size_t n) {
  uint32_t args[3];
  args[0] = (uint32_t)fd;
  args[1] = (uint32_t)(uintptr_t)buf;
  args[2] = (uint32_t)n;
  return sh_call(SYS_READ, args);   /* bytes NOT read */
}

int aot_sh_write(int fd, const void* buf, size_t n) {
  uint32_t args[3];
  args[0] = (uint32_t)fd;
  args[1] = (uint32_t)(uintptr_t)buf;
  args[2] = (uint32_t)n;
  return sh_call(SYS_WRITE, args);  /* bytes NOT written */
}

int aot_sh_close(int fd) {
  uint32_t args[1];
  args[0] = (uint32_t)fd;
  return sh_call(SYS_CLOSE, args);
}

void aot_sh_puts(const char* s) {
  sh_call(SYS_WRITE0, (void*)(uintptr_t)s);
}

void aot_sh_put_u32(const char* key, uint32_t v) {
  char buf[64];
  char digits[11];
  size_t n = 0, k = 0, i;
  const char* p = "aot: ";
  while (*p != '\0' && n < 40) {
    buf[n++] = *p++;
  }
  for (p = key; *p != '\0' && n < 50; ++p) {
    buf[n++] = *p;
  }
  buf[n++] = ' ';
  do {
    digits[k++] = (char)('0' + v % 10u);
    v /= 10u;
  } while (v != 0u);
  for (i = 0; i < k; ++i) {
    buf[n++] = digits[k - 1 - i];
  }
  buf[n++] = '\n';
  buf[n] = '\0';
  aot_sh_puts(buf);
}

void aot_sh_exit(int code) {
  uint32_t args[2];
  args[0] = ADP_STOPPED_APPLICATION_EXIT;
  args[1] = (uint32_t)code;
  sh_call(SYS_EXIT_EXTENDED, args);
  for (;;) {
  }
}

/* SysTick: a 24-bit down-counter on the core clock; its wraps are counted by the interrupt. */
#define SYST_CSR (*(volatile uint32_t*)0xE000E010u)
#define SYST_RVR (*(volatile uint32_t*)0xE000E014u)
#define SYST_CVR (*(volatile uint32_t*)0xE000E018u)

static volatile uint32_t wraps;
static uint32_t elapsed_hi;

void SysTick_Handler(void) {
  ++wraps;
}

void aot_profile_start(void) {
  SYST_CSR = 0;
  SYST_RVR = 0x00FFFFFFu;
  wraps = 0;
  SYST_CVR = 0;          /* any write clears it: the count starts from the reload value */
  SYST_CSR = 7u;         /* core clock, interrupt on wrap, enable */
}

uint32_t aot_profile_stop(void) {
  uint32_t cvr = SYST_CVR;
  uint64_t ticks;
  SYST_CSR = 0;
  /* the count goes 0 (cleared), reload, reload-1, ...: after k ticks it reads reload - k + 1 */
  ticks = (uint64_t)wraps * 0x01000000u + (cvr != 0u ? 0x01000000u - cvr : 0u);
  elapsed_hi = (uint32_t)(ticks >> 32);
  return (uint32_t)ticks;
}

uint32_t aot_profile_ticks_hi(void) {
  return elapsed_hi;
}
