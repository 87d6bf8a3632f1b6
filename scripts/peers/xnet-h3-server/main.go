// Keep Cache-Control on http.FileServer's error responses (404 and so
// on), which Go 1.23 and later drop.
//
//go:debug httpservecontentkeepheaders=1

// Command xnet-h3-server serves ROOT at / for scripts/peer-server.sh:
// HTTP/1.1 and HTTP/2 from net/http over TLS 1.3 on TCP IP:PORT, and
// HTTP/3 on UDP IP:PORT from x/net's internal/http3 on Go's own QUIC
// (golang.org/x/net/quic, not quic-go). Every response has
// `Cache-Control: no-store` and `Alt-Svc: h3=":PORT"; ma=86400`; the rest
// is each server's defaults.
//
// scripts/peer-setup.sh builds it, next to a copy of x/net's internal/http3
// and internal/httpcommon and export.go.txt (as internal/http3/export.go).
//
// Usage: xnet-h3-server IP PORT ROOT CERT KEY
//
//	xnet-h3-server -version
package main

import (
	"context"
	"crypto/tls"
	"fmt"
	"log"
	"net"
	"net/http"
	"os"
	"runtime"
	"runtime/debug"
	"strconv"

	"h3lab.test/xnet-h3-server/internal/http3"
)

func main() {
	log.SetFlags(0)
	log.SetPrefix("xnet-h3-server: ")
	if len(os.Args) == 2 && os.Args[1] == "-version" {
		fmt.Println(version())
		return
	}
	if len(os.Args) != 6 {
		log.Fatal("usage: xnet-h3-server IP PORT ROOT CERT KEY")
	}
	ip, port, root, certFile, keyFile := os.Args[1], os.Args[2], os.Args[3], os.Args[4], os.Args[5]
	if net.ParseIP(ip) == nil {
		log.Fatalf("%q is not an IP address", ip)
	}
	if n, err := strconv.Atoi(port); err != nil || n < 1 || n > 65535 {
		log.Fatalf("%q is not a port", port)
	}
	if info, err := os.Stat(root); err != nil || !info.IsDir() {
		log.Fatalf("no directory to serve at %s", root)
	}
	cert, err := tls.LoadX509KeyPair(certFile, keyFile)
	if err != nil {
		log.Fatal(err)
	}

	files := http.FileServer(http.Dir(root))
	altSvc := `h3=":` + port + `"; ma=86400`
	handler := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Cache-Control", "no-store")
		w.Header().Set("Alt-Svc", altSvc)
		files.ServeHTTP(w, r)
	})
	conf := &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS13}
	// The HTTP/3 server takes its timeouts and header limit from srv too.
	srv := &http.Server{Handler: handler, TLSConfig: conf}

	// Bind both sockets before serving, so that a port in use fails at once.
	addr := net.JoinHostPort(ip, port)
	tcp, err := net.Listen("tcp", addr)
	if err != nil {
		log.Fatal(err)
	}
	udp, err := net.ListenPacket("udp", addr)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Printf("%s serving %s on %s (h1, h2 on TCP; h3 on UDP)\n", version(), root, addr)

	// Each server serves with a copy of conf, with its own ALPN.
	errs := make(chan error, 2)
	go func() { errs <- fmt.Errorf("h3: %w", http3.Serve(context.Background(), srv, udp, conf, handler)) }()
	go func() { errs <- fmt.Errorf("h1/h2: %w", srv.ServeTLS(tcp, "", "")) }()
	log.Fatal(<-errs)
}

// version names the x/net this binary was built with, and the Go toolchain.
func version() string {
	xnet := "golang.org/x/net (unknown version)"
	if info, ok := debug.ReadBuildInfo(); ok {
		for _, dep := range info.Deps {
			if dep.Path == "golang.org/x/net" {
				xnet = dep.Path + " " + dep.Version
			}
		}
	}
	return xnet + " (x/net/quic), " + runtime.Version()
}
