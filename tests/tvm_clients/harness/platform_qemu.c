/* Where the test program's text goes under QEMU (semihosting), and how exit() leaves. */
#include "semihost.h"

void client_puts(const char* s);
void _exit(int code);

void client_puts(const char* s) { aot_sh_puts(s); }

void _exit(int code) { aot_sh_exit(code); }
