// Package nsys reads an Nsight Systems SQLite export (nsys export --type sqlite) into the
// trace/timeline model: CUPTI_ACTIVITY_KIND_KERNEL, _MEMCPY, _MEMSET and _SYNCHRONIZATION rows
// become GPU operations (one rank per device), CUPTI_ACTIVITY_KIND_RUNTIME rows become host
// API calls, names come from StringIds and device names from TARGET_INFO_GPU.
//
// Schema reference: NVIDIA Nsight Systems user guide, "SQLite Schema Reference" (export
// schema 3.x); the fixture is schema 3.13.2 from nsys 2024.5.1. The driver is
// modernc.org/sqlite (pure Go), so the pel binary stays cgo-free.
package nsys
