/* The newlib system calls a demo's printf needs under QEMU: output through semihosting, a small
 * static heap for stdio's buffer, and exit. The board harness of aot itself needs none of them. */
#include <errno.h>
#include <stddef.h>
#include <string.h>
#include <sys/stat.h>

#include "semihost.h"

void* _sbrk(ptrdiff_t n);
int _write(int fd, const char* buf, int n);
int _read(int fd, char* buf, int n);
int _close(int fd);
int _fstat(int fd, struct stat* st);
int _isatty(int fd);
int _lseek(int fd, int offset, int whence);
void _exit(int code);
int _kill(int pid, int sig);
int _getpid(void);

static char g_heap[16384] __attribute__((aligned(8)));
static size_t g_heap_used;

void* _sbrk(ptrdiff_t n) {
  void* p;
  if (n < 0 || (size_t)n > sizeof g_heap - g_heap_used) {
    errno = ENOMEM;
    return (void*)-1;
  }
  p = g_heap + g_heap_used;
  g_heap_used += (size_t)n;
  return p;
}

int _write(int fd, const char* buf, int n) {
  char chunk[65];
  int done = 0;
  (void)fd;
  while (done < n) {
    int k = n - done > 64 ? 64 : n - done;
    memcpy(chunk, buf + done, (size_t)k);
    chunk[k] = '\0';
    aot_sh_puts(chunk);
    done += k;
  }
  return n;
}

int _read(int fd, char* buf, int n) {
  (void)fd;
  (void)buf;
  (void)n;
  return 0;
}

int _close(int fd) {
  (void)fd;
  return -1;
}

int _fstat(int fd, struct stat* st) {
  (void)fd;
  st->st_mode = S_IFCHR;
  return 0;
}

int _isatty(int fd) {
  (void)fd;
  return 1;
}

int _lseek(int fd, int offset, int whence) {
  (void)fd;
  (void)offset;
  (void)whence;
  return 0;
}

void _exit(int code) { aot_sh_exit(code); }

/* abort() raises SIGABRT through these: there is one process, and the signal ends it */
int _kill(int pid, int sig) {
  (void)pid;
  aot_sh_exit(128 + sig);
}

int _getpid(void) { return 1; }
