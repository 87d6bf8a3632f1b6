/* LD_PRELOAD shim for Debian's gtlsclient/gtlsserver (libnghttp3 0.8).
 *
 * gtlsclient has no option to set request headers or QPACK settings, so this
 * shim hooks libnghttp3:
 *   SHIM_REQS=dir   client: the n-th request (from 0) sends exactly the headers
 *                   in dir/n, one "name: value" a line (written by analyze.py)
 *   SHIM_DEC_CAP=N  advertise SETTINGS_QPACK_MAX_TABLE_CAPACITY=N (0: no table)
 *   SHIM_LOG=file   log the bytes QUIC accepted on each stream, as lines
 *                   "W <stream id> <count> <hex>" (analyze.py decodes them)
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <nghttp3/nghttp3.h>

#define REAL(name) \
  static __typeof__(name) *real; \
  if (!real) real = (__typeof__(name) *)dlsym(RTLD_NEXT, #name)

/* Reads dir/n into nv; returns the count. The storage is static: nghttp3
 * copies the list before submit returns. */
static size_t load_headers(int n, nghttp3_nv *nv, size_t max) {
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
    nv[k++] = (nghttp3_nv){(uint8_t *)line, (uint8_t *)sep + 2, sep - line, strlen(sep + 2), 0};
  }
  return k;
}

int nghttp3_conn_submit_request(nghttp3_conn *conn, int64_t stream_id, const nghttp3_nv *nva,
                                size_t nvlen, const nghttp3_data_reader *dr, void *stream_user_data) {
  REAL(nghttp3_conn_submit_request);
  static int n;
  nghttp3_nv own[64];
  if (getenv("SHIM_REQS")) {
    nvlen = load_headers(n++, own, 64);
    nva = own;
  }
  return real(conn, stream_id, nva, nvlen, dr, stream_user_data);
}

static void set_capacity(nghttp3_settings *s) {
  const char *cap = getenv("SHIM_DEC_CAP");
  if (cap) s->qpack_max_dtable_capacity = strtoul(cap, NULL, 10);
}

int nghttp3_conn_client_new_versioned(nghttp3_conn **pconn, int cv, const nghttp3_callbacks *cb,
                                      int sv, const nghttp3_settings *settings,
                                      const nghttp3_mem *mem, void *user_data) {
  REAL(nghttp3_conn_client_new_versioned);
  nghttp3_settings s = *settings;
  set_capacity(&s);
  return real(pconn, cv, cb, sv, &s, mem, user_data);
}

int nghttp3_conn_server_new_versioned(nghttp3_conn **pconn, int cv, const nghttp3_callbacks *cb,
                                      int sv, const nghttp3_settings *settings,
                                      const nghttp3_mem *mem, void *user_data) {
  REAL(nghttp3_conn_server_new_versioned);
  nghttp3_settings s = *settings;
  set_capacity(&s);
  return real(pconn, cv, cb, sv, &s, mem, user_data);
}

/* Byte capture: writev_stream hands out a stream's unsent bytes; add_write_offset
 * then says how many of them QUIC accepted. Only those are logged. */
static unsigned char pending[1 << 20];
static size_t npending;
static int64_t pending_sid = -1;

static FILE *log_file(void) {
  static FILE *f;
  if (!f && getenv("SHIM_LOG")) f = fopen(getenv("SHIM_LOG"), "w");
  return f;
}

nghttp3_ssize nghttp3_conn_writev_stream(nghttp3_conn *conn, int64_t *pstream_id, int *pfin,
                                         nghttp3_vec *vec, size_t veccnt) {
  REAL(nghttp3_conn_writev_stream);
  nghttp3_ssize nvec = real(conn, pstream_id, pfin, vec, veccnt);
  npending = 0;
  pending_sid = nvec >= 0 ? *pstream_id : -1;
  for (nghttp3_ssize i = 0; i < nvec && npending + vec[i].len <= sizeof pending; i++) {
    memcpy(pending + npending, vec[i].base, vec[i].len);
    npending += vec[i].len;
  }
  return nvec;
}

int nghttp3_conn_add_write_offset(nghttp3_conn *conn, int64_t stream_id, uint64_t n) {
  REAL(nghttp3_conn_add_write_offset);
  FILE *f = log_file();
  if (f) {
    fprintf(f, "W %lld %llu ", (long long)stream_id, (unsigned long long)n);
    if (stream_id == pending_sid && n <= npending) {
      for (uint64_t i = 0; i < n; i++) fprintf(f, "%02x", pending[i]);
      memmove(pending, pending + n, npending - n);
      npending -= n;
    } else {
      fputc('?', f); /* bytes not seen: analyze.py refuses the capture */
    }
    fputc('\n', f);
    fflush(f);
  }
  return real(conn, stream_id, n);
}
