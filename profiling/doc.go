// Package profiling runs a profiling window inside a load run (pel run --profile-at AT
// --profile-for FOR, or a contract profile block) and says what it cost.
//
// At AT after the load starts it calls the engine's profiler control — vLLM's and SGLang's
// POST /start_profile, or a user command — and at AT+FOR the matching stop. The window is
// taken conservatively, from the moment the start call is sent to the moment the stop
// call answers: the profiler may be active anywhere in between, so every task in flight
// at any instant of it is marked (record field profiled) and, unless asked otherwise,
// moved out of the warm phase into the phase "profiled", which stage 1 reports apart.
//
// The overhead is measured, not assumed: client TTFT, ITL, E2E and TPOT of what ran wholly
// inside the span where the profiler surely ran (from the start call's answer to the
// sending of the stop) against the warm tasks that never overlapped the window, as
// medians with 95% task-clustered bootstrap intervals (package resample) of the medians
// and of their ratio, labelled as profiling overhead. The trace the profiler wrote (a
// file, or the newest file written during the window in the directory the engine writes
// to) is handed to stages 2 and 3 with the window noted.
//
// A control that fails never loses the run: the load goes on, the error is kept in the
// evidence (Profile.Errors) and said in the run's notes. Every answer read from an engine
// or a command is bounded in size and time; Ctrl-C stops the window and the profiler.
package profiling
