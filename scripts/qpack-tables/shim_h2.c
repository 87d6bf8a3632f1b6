/* LD_PRELOAD shim for Debian's nghttp (libnghttp2 1.52), the h2 counterpart of shim.c.
 *
 * nghttp's -H sets one value for all requests (and keeps its own accept and
 * user-agent), so this shim hooks libnghttp2:
 *   SHIM_REQS=dir   the n-th request (from 0) sends exactly the headers in
 *                   dir/n, one "name: value" a line (written by analyze.py)
 *   SHIM_LOG=file   log the connection's bytes as lines "S <hex>" (sent) and
 *                   "R <hex>" (received), before TLS (analyze.py decodes them)
 * No libnghttp2 headers are installed by nghttp2-client: nv_t and the
 * prototypes are copied from nghttp2.h.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>

typedef struct { uint8_t *name, *value; size_t namelen, valuelen; uint8_t flags; } nv_t;

int32_t nghttp2_submit_request(void *session, const void *pri_spec, const nv_t *nva, size_t nvlen,
                               const void *data_prd, void *stream_user_data);
ssize_t nghttp2_session_mem_send(void *session, const uint8_t **data_ptr);
ssize_t nghttp2_session_mem_recv(void *session, const uint8_t *in, size_t inlen);

#define REAL(name) \
  static __typeof__(name) *real; \
  if (!real) real = (__typeof__(name) *)dlsym(RTLD_NEXT, #name)

/* Reads dir/n into nv; returns the count. The storage is static: nghttp2
 * copies the list before submit returns. */
static size_t load_headers(int n, nv_t *nv, size_t max) {
  static char buf[16384];
  char path[4096];
  snprintf(path, sizeof path, "%s/%d", getenv("SHIM_REQS"), n);
  FILE *f = fopen(path, "r");
  if (!f) { perror(path); abort(); }
  size_t len = fread(buf, 1, sizeof buf - 1, f);
  fclose(f);
  buf[len] = 0;
  size_t k = 0;
  for (char *line = strtok(buf, "\n"); line && k < max; line = strtok(NULL, "\n")) {
    char *sep = strstr(line + 1, ": "); /* + 1: pseudo-header names start with ':' */
    if (!sep) continue;
    nv[k++] = (nv_t){(uint8_t *)line, (uint8_t *)sep + 2, sep - line, strlen(sep + 2), 0};
  }
  return k;
}

int32_t nghttp2_submit_request(void *session, const void *pri_spec, const nv_t *nva, size_t nvlen,
                               const void *data_prd, void *stream_user_data) {
  REAL(nghttp2_submit_request);
  static int n;
  nv_t own[64];
  if (getenv("SHIM_REQS")) {
    nvlen = load_headers(n++, own, 64);
    nva = own;
  }
  return real(session, pri_spec, nva, nvlen, data_prd, stream_user_data);
}

static void log_bytes(char dir, const uint8_t *p, ssize_t n) {
  static FILE *f;
  if (!f && getenv("SHIM_LOG")) f = fopen(getenv("SHIM_LOG"), "w");
  if (!f) return;
  fprintf(f, "%c ", dir);
  for (ssize_t i = 0; i < n; i++) fprintf(f, "%02x", p[i]);
  fputc('\n', f);
  fflush(f);
}

ssize_t nghttp2_session_mem_send(void *session, const uint8_t **data_ptr) {
  REAL(nghttp2_session_mem_send);
  ssize_t n = real(session, data_ptr);
  if (n > 0) log_bytes('S', *data_ptr, n);
  return n;
}

ssize_t nghttp2_session_mem_recv(void *session, const uint8_t *in, size_t inlen) {
  REAL(nghttp2_session_mem_recv);
  ssize_t n = real(session, in, inlen);
  if (n > 0) log_bytes('R', in, n);
  return n;
}
