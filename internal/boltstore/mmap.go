package boltstore

import (
	"runtime"
	"strconv"
)

// DefaultInitialMmapSize returns how much address space a Store maps its
// file into when it opens it, unless Options.InitialMmapSize says
// otherwise. bbolt reads the file through one memory map and must replace
// the map when the file outgrows it; the replacement waits until every
// open read transaction has ended and holds up every new transaction
// meanwhile. A map far larger than the file is rarely outgrown, so writers
// do not wait for long reads. It costs address space, not memory: only the
// pages the store touches become resident. It is 8 GiB on 64-bit systems
// (a database of a million reservations is about 2.3 GiB); 256 MiB on
// 32-bit ones, whose 3 to 4 GiB of address space must also hold the heap
// and any other store the process opens, and where bbolt cannot map more
// than 2 GiB anyway; and none on Windows, where bbolt grows the file
// itself to the size of its map.
func DefaultInitialMmapSize() int {
	switch {
	case runtime.GOOS == "windows":
		return 0
	case strconv.IntSize == 32:
		return 256 << 20
	}
	size := int64(8 << 30) // A variable: the constant would not fit a 32-bit int.
	return int(size)
}

// initialMmapSize is the bbolt InitialMmapSize that o asks for.
func (o Options) initialMmapSize() int {
	switch {
	case o.InitialMmapSize == 0:
		return DefaultInitialMmapSize()
	case o.InitialMmapSize < 0:
		return 0
	}
	return o.InitialMmapSize
}
