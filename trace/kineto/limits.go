package kineto

// Bounds on what the Kineto reader buffers. With timeline.Limits (records kept, name
// lengths, the name table) they are every bound pel puts on trace input: the scanner's
// buffer stays at its initial 256 KiB whatever the file holds, so memory grows with the
// operations kept, never with the bytes read.
const (
	// MaxStringBytes is the longest string the scanner decodes (names, categories, keys).
	// A longer one is read on as a stream and only its first MaxStringBytes are kept (names
	// cut this way are counted in the timeline's notes). It equals the name limit: no token
	// pel uses needs more, and a 1 GiB "name" inside a small .json.gz is never held.
	MaxStringBytes = 16 << 10
	// MaxNumberBytes is the longest number token; longer is a syntax error. Trace numbers have
	// at most ~25 characters (ns-resolution epoch timestamps).
	MaxNumberBytes = 1024
	// MaxDepth bounds the nesting of skipped values (args may nest): it bounds recursion,
	// and 512 is far beyond any real trace.
	MaxDepth = 512
	// MaxDevices is how many deviceProperties entries are kept (one per GPU of the host);
	// further entries are read and skipped.
	MaxDevices = 1024
)

// scannerBufferBytes is the scanner's read buffer: every token it must hold whole
// (MaxStringBytes of a string, MaxNumberBytes of a number, a 12-byte escape) fits in it.
const scannerBufferBytes = 256 << 10
