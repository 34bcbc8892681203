/* Where the test program's text goes on the host. */
#include <stdio.h>

void client_puts(const char* s);

void client_puts(const char* s) { (void)fputs(s, stdout); }
