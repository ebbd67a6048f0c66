package client

// SendError exposes how a request that got no answer is classified.
func (c *Client) SendError(method, path string, err error, sent bool) error {
	c.init()
	return c.sendError(method, path, err, sent)
}
