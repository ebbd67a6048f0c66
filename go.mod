module github.com/reserve/reserve

go 1.26

require (
	github.com/google/uuid v1.6.0
	go.etcd.io/bbolt v1.4.3
)

require golang.org/x/sys v0.29.0 // indirect
