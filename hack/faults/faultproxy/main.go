// faultproxy: a TLS-terminating reverse proxy in front of the test kube-apiserver that
// fails one chosen write, for the fault-injection tests.
//
// It counts the writes (POST, PUT, PATCH, DELETE) to leaderworkersets and services, and
// on the Nth one does what it was armed with over the admin endpoint:
//
//	status  answer with this HTTP status, body and headers; the write never reaches the server
//	stall   hold the request (the write never reaches the server) until disarmed: the test
//	        SIGKILLs the client while it waits
//	toxic   a TCP fault on the client's connection through toxiproxy, which sits in front of
//	        this proxy: add the toxic, forward the write, send the answer into it, then remove
//	        the toxic once the connection is closed or the client's next request arrives
//
// While a toxic is in place nothing else passes: other requests and new connections wait, so
// the toxic hits exactly the one answer it was meant for (toxiproxy applies a toxic to every
// connection, the ones opened later included).
//
// Admin endpoint (plain HTTP, loopback): POST /arm with {"nth", "status", "body", "headers",
// "stall", "toxic"}; POST /reset; GET /state.
package main

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"

	"flag"
	"fmt"
	"log"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"os"
	"regexp"
	"sync"
	"time"
)

// The writes of a pass; Lease renewals and reads are not counted.
var countedPath = regexp.MustCompile(`/(leaderworkersets|services)(/|$)`)

// How long a toxic may stay in place when neither trigger comes (a client gone silent).
const toxicFallback = 20 * time.Second

type fault struct {
	Nth     int               `json:"nth"`
	Status  int               `json:"status,omitempty"`
	Body    string            `json:"body,omitempty"`
	Headers map[string]string `json:"headers,omitempty"`
	Stall   bool              `json:"stall,omitempty"`
	Toxic   json.RawMessage   `json:"toxic,omitempty"` // a toxiproxy toxic, as its API takes it
}

type state struct {
	Writes  int    `json:"writes"`  // counted writes seen since the last reset
	Fired   bool   `json:"fired"`   // the armed fault was applied
	Stalled bool   `json:"stalled"` // a request is being held (stall)
	Target  string `json:"target"`  // "METHOD path" of the write that was hit
}

type proxy struct {
	forward   *httputil.ReverseProxy
	toxiproxy string       // toxiproxy API base URL, e.g. http://127.0.0.1:8474/proxies/apiserver
	gate      sync.RWMutex // held for writing while a toxic is in place

	mu      sync.Mutex
	armed   *fault
	st      state
	release chan struct{} // closed on reset: stalled requests give up
	next    chan struct{} // closed when a request arrives while a toxic is in place
	closed  map[net.Conn]chan struct{}
}

type connKey struct{}

func main() {
	listen := flag.String("listen", "127.0.0.1:0", "address for the proxied API (TLS)")
	admin := flag.String("admin", "127.0.0.1:0", "address for the admin endpoint (plain HTTP)")
	upstream := flag.String("upstream", "", "kube-apiserver URL")
	caFile := flag.String("ca", "", "CA bundle that signed the kube-apiserver certificate")
	certFile := flag.String("cert", "", "serving certificate")
	keyFile := flag.String("key", "", "serving key")
	toxiproxyURL := flag.String("toxiproxy", "", "toxiproxy API URL of the proxy in front of this one")
	flag.Parse()

	target, err := url.Parse(*upstream)
	if err != nil || *upstream == "" {
		log.Fatalf("faultproxy: -upstream: %v", err)
	}
	pool := x509.NewCertPool()
	pem, err := os.ReadFile(*caFile)
	if err != nil || !pool.AppendCertsFromPEM(pem) {
		log.Fatalf("faultproxy: -ca %s: cannot read a certificate (%v)", *caFile, err)
	}
	cert, err := tls.LoadX509KeyPair(*certFile, *keyFile)
	if err != nil {
		log.Fatalf("faultproxy: -cert/-key: %v", err)
	}

	p := &proxy{toxiproxy: *toxiproxyURL, release: make(chan struct{}), closed: map[net.Conn]chan struct{}{}}
	p.forward = &httputil.ReverseProxy{
		Rewrite: func(r *httputil.ProxyRequest) {
			r.SetURL(target)
			r.Out.Host = target.Host
		},
		Transport:     &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}, ForceAttemptHTTP2: false},
		FlushInterval: -1, // watches stream
	}

	apiListener, err := net.Listen("tcp", *listen)
	if err != nil {
		log.Fatalf("faultproxy: %v", err)
	}
	adminListener, err := net.Listen("tcp", *admin)
	if err != nil {
		log.Fatalf("faultproxy: %v", err)
	}
	server := &http.Server{
		Handler:     p,
		TLSConfig:   &tls.Config{Certificates: []tls.Certificate{cert}, NextProtos: []string{"http/1.1"}},
		ConnContext: func(ctx context.Context, c net.Conn) context.Context { return context.WithValue(ctx, connKey{}, c) },
		ConnState:   p.connState,
		ErrorLog:    log.New(os.Stderr, "faultproxy: ", 0),
	}
	// The test reads these two lines to learn the ports.
	fmt.Printf("api %s\nadmin %s\n", apiListener.Addr(), adminListener.Addr())
	os.Stdout.Sync()
	go func() { log.Fatal(http.Serve(adminListener, http.HandlerFunc(p.admin))) }()
	log.Fatal(server.ServeTLS(gatedListener{apiListener, p}, "", ""))
}

// gatedListener hands out no new connection while a toxic is in place.
type gatedListener struct {
	net.Listener
	p *proxy
}

func (l gatedListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err == nil {
		l.p.gate.RLock()
		l.p.gate.RUnlock() //nolint:staticcheck // only waits for the gate to open
	}
	return c, err
}

func (p *proxy) connState(c net.Conn, s http.ConnState) {
	if s != http.StateClosed {
		return
	}
	p.mu.Lock()
	if ch, ok := p.closed[c]; ok {
		close(ch)
		delete(p.closed, c)
	}
	p.mu.Unlock()
}

func (p *proxy) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	p.mu.Lock()
	if p.next != nil { // a toxic is in place and the client has moved on: take it away first
		close(p.next)
		p.next = nil
	}
	p.mu.Unlock()
	p.gate.RLock()
	hit, f := p.count(r)
	if !hit {
		defer p.gate.RUnlock()
		p.forward.ServeHTTP(w, r)
		return
	}
	switch {
	case f.Stall:
		p.gate.RUnlock()
		p.stall(r)
	case f.Toxic != nil:
		p.gate.RUnlock()
		p.withToxic(w, r, f.Toxic)
	default:
		defer p.gate.RUnlock()
		for k, v := range f.Headers {
			w.Header().Set(k, v)
		}
		w.WriteHeader(f.Status)
		_, _ = w.Write([]byte(f.Body))
	}
}

// count returns whether r is the armed write, and the fault.
func (p *proxy) count(r *http.Request) (bool, fault) {
	if r.Method == http.MethodGet || r.Method == http.MethodHead || !countedPath.MatchString(r.URL.Path) {
		return false, fault{}
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.st.Writes++
	if p.armed == nil || p.st.Fired || p.st.Writes != p.armed.Nth {
		return false, fault{}
	}
	p.st.Fired = true
	p.st.Target = r.Method + " " + r.URL.Path
	log.Printf("faultproxy: write %d (%s) hit", p.st.Writes, p.st.Target)
	return true, *p.armed
}

func (p *proxy) stall(r *http.Request) {
	p.mu.Lock()
	p.st.Stalled = true
	release := p.release
	p.mu.Unlock()
	select {
	case <-release:
	case <-r.Context().Done():
	}
	p.mu.Lock()
	p.st.Stalled = false
	p.mu.Unlock()
}

// withToxic forwards r with a toxic in place on the client's connection. It returns holding
// the gate, which a goroutine opens once the toxic is gone: the Go server notices a closed
// connection only after the handler has returned. (A sync.RWMutex may be unlocked by another
// goroutine than the one that locked it.)
func (p *proxy) withToxic(w http.ResponseWriter, r *http.Request, toxic json.RawMessage) {
	p.gate.Lock()
	conn, _ := r.Context().Value(connKey{}).(net.Conn)
	closed, next := make(chan struct{}), make(chan struct{})
	name, err := p.addToxic(toxic)
	if err != nil {
		p.gate.Unlock()
		log.Printf("faultproxy: %v", err)
		http.Error(w, err.Error(), http.StatusBadGateway)
		return
	}
	p.mu.Lock()
	p.closed[conn], p.next = closed, next
	p.mu.Unlock()
	// The answer is on its way into the toxic. Take the toxic away once it has done its work:
	// the connection was closed (cut, reset, timeout), or the client asked something else,
	// so it has read the answer (latency). Deferred: ReverseProxy panics (http.ErrAbortHandler)
	// when the connection dies while it copies the answer, as it does under these toxics.
	defer func() { go p.removeToxicOnce(name, conn, closed, next) }()
	p.forward.ServeHTTP(w, r)
}

// removeToxicOnce waits for the toxic to have done its work, takes it away and opens the gate.
func (p *proxy) removeToxicOnce(name string, conn net.Conn, closed, next chan struct{}) {
	select {
	case <-closed:
	case <-next:
	case <-time.After(toxicFallback):
		log.Printf("faultproxy: toxic %s removed after %s without a trigger", name, toxicFallback)
	}
	if err := p.removeToxic(name); err != nil {
		log.Printf("faultproxy: %v", err)
	}
	p.mu.Lock()
	delete(p.closed, conn)
	p.next = nil
	p.mu.Unlock()
	p.gate.Unlock()
}

func (p *proxy) addToxic(toxic json.RawMessage) (string, error) {
	var named struct {
		Name string `json:"name"`
	}
	if err := json.Unmarshal(toxic, &named); err != nil || named.Name == "" {
		return "", fmt.Errorf("toxic without a name: %s", toxic)
	}
	resp, err := http.Post(p.toxiproxy+"/toxics", "application/json", bytes.NewReader(toxic))
	if err != nil {
		return "", fmt.Errorf("adding toxic %s: %w", named.Name, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return "", fmt.Errorf("adding toxic %s: toxiproxy answered %s", named.Name, resp.Status)
	}
	return named.Name, nil
}

func (p *proxy) removeToxic(name string) error {
	req, _ := http.NewRequest(http.MethodDelete, p.toxiproxy+"/toxics/"+name, nil)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return fmt.Errorf("removing toxic %s: %w", name, err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusNoContent && resp.StatusCode != http.StatusOK {
		return fmt.Errorf("removing toxic %s: toxiproxy answered %s", name, resp.Status)
	}
	return nil
}

func (p *proxy) admin(w http.ResponseWriter, r *http.Request) {
	p.mu.Lock()
	defer p.mu.Unlock()
	switch {
	case r.Method == http.MethodPost && r.URL.Path == "/arm":
		var f fault
		if err := json.NewDecoder(r.Body).Decode(&f); err != nil || f.Nth < 1 ||
			(f.Status == 0 && !f.Stall && f.Toxic == nil) {
			http.Error(w, fmt.Sprintf("want {nth >= 1, and status, stall or toxic}: %v", err), http.StatusBadRequest)
			return
		}
		p.armed, p.st = &f, state{}
	case r.Method == http.MethodPost && r.URL.Path == "/reset":
		p.armed, p.st = nil, state{}
		close(p.release)
		p.release = make(chan struct{})
	case r.Method == http.MethodGet && r.URL.Path == "/state":
	default:
		http.Error(w, "POST /arm, POST /reset or GET /state", http.StatusNotFound)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(p.st)
}
