// quic-go-client downloads one URL once, over HTTP/3 with quic-go or over
// HTTP/2 with Go's net/http, and prints the bytes it read. It is a second,
// independent client stack for scripts/client-cost.sh; it verifies no
// certificate, so use it only against a test server.
package main

import (
	"crypto/tls"
	"fmt"
	"io"
	"net/http"
	"os"
	"time"

	"github.com/quic-go/quic-go/http3"
)

func main() {
	if len(os.Args) != 3 || (os.Args[1] != "h2" && os.Args[1] != "h3") {
		fmt.Fprintln(os.Stderr, "usage: quic-go-client h2|h3 URL")
		os.Exit(2)
	}
	proto, url := os.Args[1], os.Args[2]
	tlsConf := &tls.Config{InsecureSkipVerify: true}
	var transport http.RoundTripper = &http.Transport{TLSClientConfig: tlsConf, ForceAttemptHTTP2: true}
	if proto == "h3" {
		transport = &http3.Transport{TLSClientConfig: tlsConf}
	}
	client := &http.Client{Transport: transport}
	start := time.Now()
	resp, err := client.Get(url)
	if err != nil {
		fmt.Fprintln(os.Stderr, "quic-go-client:", err)
		os.Exit(1)
	}
	defer resp.Body.Close()
	n, err := io.Copy(io.Discard, resp.Body)
	if err != nil {
		fmt.Fprintln(os.Stderr, "quic-go-client: reading the body:", err)
		os.Exit(1)
	}
	fmt.Printf("bytes %d proto %s status %d seconds %.3f\n", n, resp.Proto, resp.StatusCode, time.Since(start).Seconds())
}
