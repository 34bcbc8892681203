/* Semihosting (ARM's debug-monitor calls through BKPT 0xAB) as used by aot firmware: the
 * emulator or debug probe services file I/O and the exit status. */
#ifndef AOT_SEMIHOST_H_
#define AOT_SEMIHOST_H_
#include <stddef.h>
#include <stdint.h>

int aot_sh_open(const char* path, int write);
int aot_sh_read(int fd, void* buf, size_t n);    /* 0 when all n bytes were read */
int aot_sh_write(int fd, const void* buf, size_t n);
int aot_sh_close(int fd);
void aot_sh_puts(const char* s);                  /* to the host's stdout */
void aot_sh_put_u32(const char* key, uint32_t v); /* "aot: <key> <v>\n" */
void aot_sh_exit(int code) __attribute__((noreturn));

/* Instruction counting between two calls (SysTick under QEMU -icount, see board.json) */
void aot_profile_start(void);
uint32_t aot_profile_ticks_hi(void);
uint32_t aot_profile_stop(void);                  /* elapsed SysTick ticks, low 32 bits */
uint32_t aot_stack_used(void);                    /* deepest stack use seen, from the painted pattern */

#endif
