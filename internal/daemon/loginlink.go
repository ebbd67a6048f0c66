package daemon

import (
	"context"
	"log/slog"
	"os"

	"github.com/reserve/reserve/internal/engine"
	"github.com/reserve/reserve/internal/server"
)

// logLoginLink logs a one-time link that signs a browser in to the form on
// the TCP listener at tcpAddr as the daemon owner's actor (its uid's actor
// on the socket, bound now if the uid has none yet). A link that cannot be made is only a warning: the
// owner can still run reservectl login-link.
func logLoginLink(ctx context.Context, eng *engine.Engine, logger *slog.Logger, tcpAddr string) {
	actor, err := server.OwnerActor(ctx, eng, os.Getuid())
	if err != nil {
		logger.Warn("could not make a browser login link: the daemon's own uid has no actor; run 'reservectl login-link' for one", "uid", os.Getuid(), "error", err)
		return
	}
	code, expires, err := eng.CreateLoginCode(ctx, actor)
	if err != nil {
		logger.Warn("could not make a browser login link; run 'reservectl login-link' for one", "actor", actor, "error", err)
		return
	}
	logger.Info("open the browser form with this one-time login link (or get a new one with 'reservectl login-link')",
		"url", server.LoginURL(server.BaseURL(tcpAddr), code), "actor", actor, "expires", expires.Local().Format("15:04:05"))
}
