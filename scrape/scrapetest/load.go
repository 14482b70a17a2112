package scrapetest

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"sync"
	"sync/atomic"
	"time"
)

// Load is a closed loop of completions against an OpenAI-compatible server (pel sim in
// tests): Concurrency workers each send one request at a time, with distinct prompts (no
// prefix-cache help) of PromptLen token ids and MaxTokens output tokens (ignore_eos).
type Load struct {
	BaseURL     string
	Model       string // "" = the first /v1/models entry
	Concurrency int
	PromptLen   int
	MaxTokens   int

	done atomic.Int64
	errs atomic.Int64
	stop chan struct{}
	wg   sync.WaitGroup
	next atomic.Uint32
	err  atomic.Value
}

// Start launches the workers; each stops after Stop or once Done reaches limit (0 = no limit).
func (l *Load) Start(limit int64) error {
	if l.Model == "" {
		m, err := FirstModel(l.BaseURL)
		if err != nil {
			return err
		}
		l.Model = m
	}
	l.stop = make(chan struct{})
	client := &http.Client{Timeout: 2 * time.Minute}
	for i := 0; i < l.Concurrency; i++ {
		l.wg.Add(1)
		go func() {
			defer l.wg.Done()
			for {
				select {
				case <-l.stop:
					return
				default:
				}
				base := l.next.Add(uint32(l.PromptLen))
				ids := make([]uint32, l.PromptLen)
				for k := range ids {
					ids[k] = 1000 + (base+uint32(k))%30000
				}
				body, _ := json.Marshal(map[string]any{"model": l.Model, "prompt": ids, "max_tokens": l.MaxTokens, "ignore_eos": true})
				resp, err := client.Post(l.BaseURL+"/v1/completions", "application/json", bytes.NewReader(body))
				if err != nil {
					l.errs.Add(1)
					l.err.Store(err.Error())
					return
				}
				io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				if resp.StatusCode != http.StatusOK {
					l.errs.Add(1)
					l.err.Store(fmt.Sprintf("HTTP %d", resp.StatusCode))
					return
				}
				if n := l.done.Add(1); limit > 0 && n >= limit {
					return
				}
			}
		}()
	}
	return nil
}

// Done is the number of completed requests.
func (l *Load) Done() int64 { return l.done.Load() }

// Wait waits for the workers to stop by themselves (the limit).
func (l *Load) Wait() { l.wg.Wait() }

// Stop stops the workers after their request in flight and waits for them. It returns
// the first request error, if any.
func (l *Load) Stop() error {
	select {
	case <-l.stop:
	default:
		close(l.stop)
	}
	l.wg.Wait()
	if l.errs.Load() > 0 {
		return fmt.Errorf("%d requests failed, e.g. %v", l.errs.Load(), l.err.Load())
	}
	return nil
}

// FirstModel returns the first model id of GET /v1/models.
func FirstModel(base string) (string, error) {
	resp, err := http.Get(base + "/v1/models")
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	var m struct {
		Data []struct {
			ID string `json:"id"`
		} `json:"data"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&m); err != nil || len(m.Data) == 0 {
		return "", fmt.Errorf("/v1/models: %v (%d models)", err, len(m.Data))
	}
	return m.Data[0].ID, nil
}
