package daemon

import (
	"strings"
	"testing"
)

func TestFitConnCaps(t *testing.T) {
	for _, tc := range []struct {
		name                         string
		limit                        uint64
		tcp, socket                  int
		tcpGiven, socketGiven, tcpOn bool
		want                         connCaps
		wantErr                      string
	}{
		{name: "unknown limit", limit: 0, tcp: 99999, socket: 99999, tcpGiven: true, socketGiven: true, tcpOn: true, want: connCaps{tcp: 99999, socket: 99999}},
		{name: "defaults fit", limit: 4096, tcp: 2048, socket: 256, tcpOn: true, want: connCaps{tcp: 2048, socket: 256}},
		{name: "defaults fit exactly", limit: 2048 + 256 + fdReserve, tcp: 2048, socket: 256, tcpOn: true, want: connCaps{tcp: 2048, socket: 256}},
		{name: "defaults lowered", limit: 1024, tcp: 2048, socket: 256, tcpOn: true, want: connCaps{tcp: 672, socket: 224, lowered: true}},
		{name: "defaults lowered far", limit: 131, tcp: 2048, socket: 256, tcpOn: true, want: connCaps{tcp: 2, socket: 1, lowered: true}},
		{name: "without TCP the socket gets the room", limit: 200, tcp: 2048, socket: 256, want: connCaps{socket: 72, lowered: true}},
		{name: "given TCP cap keeps, socket lowered", limit: 1024, tcp: 800, socket: 256, tcpGiven: true, tcpOn: true, want: connCaps{tcp: 800, socket: 96, lowered: true}},
		{name: "given socket cap keeps, TCP lowered", limit: 1024, tcp: 2048, socket: 50, socketGiven: true, tcpOn: true, want: connCaps{tcp: 846, socket: 50, lowered: true}},
		{name: "given caps that fit", limit: 1024, tcp: 600, socket: 200, tcpGiven: true, socketGiven: true, tcpOn: true, want: connCaps{tcp: 600, socket: 200}},
		{name: "given caps that do not fit", limit: 1024, tcp: 800, socket: 200, tcpGiven: true, socketGiven: true, tcpOn: true,
			wantErr: "--max-tcp-connections 800 and --max-socket-connections 200 do not fit in the open file limit (RLIMIT_NOFILE) of 1024, of which reserved keeps 128 files for the database and its other files: lower the cap or raise the limit (ulimit -n, systemd LimitNOFILE=)"},
		{name: "given socket cap without TCP that does not fit", limit: 1024, tcp: 2048, socket: 1000, socketGiven: true,
			wantErr: "--max-socket-connections 1000 does not fit"},
		{name: "given TCP cap leaves no room", limit: 1024, tcp: 896, socket: 256, tcpGiven: true, tcpOn: true,
			wantErr: "--max-tcp-connections 896 leaves no room for socket connections"},
		{name: "given socket cap leaves no room", limit: 1024, tcp: 2048, socket: 896, socketGiven: true, tcpOn: true,
			wantErr: "--max-socket-connections 896 leaves no room for TCP connections"},
		{name: "limit too low", limit: 129, tcp: 2048, socket: 256, tcpOn: true,
			wantErr: "the open file limit (RLIMIT_NOFILE) of 129 leaves no room for connections, as reserved keeps 128 files for the database and its other files: raise it (ulimit -n, systemd LimitNOFILE=)"},
	} {
		got, err := fitConnCaps(tc.limit, tc.tcp, tc.socket, tc.tcpGiven, tc.socketGiven, tc.tcpOn)
		switch {
		case tc.wantErr != "":
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Errorf("%s: %+v, %v; want the error %q", tc.name, got, err, tc.wantErr)
			}
		case err != nil || got != tc.want:
			t.Errorf("%s: %+v, %v; want %+v", tc.name, got, err, tc.want)
		}
	}
}
