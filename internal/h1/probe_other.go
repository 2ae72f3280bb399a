//go:build !unix

package h1

// open reports whether the server has left the idle connection open. Without a way to peek
// at the socket, only the buffered bytes tell.
func (c *conn) open() bool { return c.br.Buffered() == 0 }
