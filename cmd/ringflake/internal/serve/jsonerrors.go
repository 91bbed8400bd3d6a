package serve

import (
	"encoding/json"
	"net"
	"strings"
)

// JSONErrors returns ln with its connections wrapped: net/http's own error
// answers, which it writes before any handler runs (a 431 for a header
// over MaxHeaderBytes, a 400 for a malformed request), are turned into
// JSON like the service's: {"error":"431 Request Header Fields Too Large"}.
func JSONErrors(ln net.Listener) net.Listener { return jsonErrors{ln} }

// jsonErrors is a listener whose connections turn net/http's own error
// answers, which it writes before any handler runs (a 431 for a header
// over MaxHeaderBytes, a 400 for a malformed request), into JSON like the
// service's: {"error":"431 Request Header Fields Too Large"}.
type jsonErrors struct{ net.Listener }

// Accept wraps the connection.
func (l jsonErrors) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	return jsonErrorConn{c}, nil
}

// jsonErrorConn rewrites net/http's error answers; everything else it
// writes as given.
type jsonErrorConn struct{ net.Conn }

// plainError is what net/http puts between the status line and the text
// of its own error answers, in one write. The service's answers never
// start so: their headers include Cache-Control, which sorts first.
const plainError = "\r\nContent-Type: text/plain; charset=utf-8\r\nConnection: close\r\n\r\n"

// Write writes b, or the JSON form of the error answer b is.
func (c jsonErrorConn) Write(b []byte) (int, error) {
	s := string(b)
	status, text, ok := strings.Cut(s, plainError)
	if !ok || !strings.HasPrefix(status, "HTTP/1.1 4") && !strings.HasPrefix(status, "HTTP/1.1 5") || strings.Contains(status, "\r\n") {
		return c.Conn.Write(b)
	}
	body, _ := json.Marshal(struct {
		Error string `json:"error"`
	}{text})
	if _, err := c.Conn.Write([]byte(status + "\r\nContent-Type: application/json\r\nConnection: close\r\n\r\n" + string(body) + "\n")); err != nil {
		return 0, err
	}
	return len(b), nil
}

// CloseWrite shuts the connection's writing side, as net/http does after
// an error answer so that the client reads it before the connection
// closes.
func (c jsonErrorConn) CloseWrite() error {
	if cw, ok := c.Conn.(interface{ CloseWrite() error }); ok {
		return cw.CloseWrite()
	}
	return nil
}
