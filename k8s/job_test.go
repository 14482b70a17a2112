package k8s

import (
	"bytes"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/serializer"

	"github.com/pel-ladder/pel/internal/golden"
)

func testJob() *Job {
	return &Job{
		Image: "registry.example/pel:v1", Target: "http://vllm.serving.svc:8000", Shards: 4,
		Contract:     []byte("name: soak\nversion: 1\narrival: {process: poisson, rate: 1000}\nduration: 1h\ntasks:\n  - {name: chat, prompt_tokens: 200}\n"),
		ContractName: "Soak (1 h)", Duration: time.Hour, Namespace: "bench",
		StartAt: time.Date(2026, 3, 1, 12, 5, 0, 0, time.UTC),
		Now:     time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC),
		Metrics: []string{"http://vllm.serving.svc:8000/metrics"}, APIKeySecret: "llm-key", StorageClass: "nfs",
	}
}

// decodeStrict decodes every document into the Kubernetes API types, refusing unknown and
// duplicate fields as the API server's strict validation does.
func decodeStrict(t *testing.T, manifests []byte) []runtime.Object {
	t.Helper()
	scheme := runtime.NewScheme()
	if err := corev1.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	if err := batchv1.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	dec := serializer.NewCodecFactory(scheme, serializer.EnableStrict).UniversalDeserializer()
	var out []runtime.Object
	for i, doc := range bytes.Split(manifests, []byte("\n---\n"))[1:] {
		obj, _, err := dec.Decode(append(doc, '\n'), nil, nil) // the separator took the document's last newline
		if err != nil {
			t.Fatalf("document %d does not decode strictly: %v\n%s", i+1, err, doc)
		}
		out = append(out, obj)
	}
	return out
}

func TestManifestsDecodeStrictly(t *testing.T) {
	j := testJob()
	m, err := j.Manifests()
	if err != nil {
		t.Fatal(err)
	}
	golden.Check(t, filepath.Join("testdata", "job.yaml"), m)
	objs := decodeStrict(t, m)
	if len(objs) != 4 {
		t.Fatalf("%d objects", len(objs))
	}
	cm, ok := objs[0].(*corev1.ConfigMap)
	if !ok || cm.Data["contract.yaml"] != string(j.Contract) || cm.Namespace != "bench" {
		t.Fatalf("config map %+v", objs[0])
	}
	pvc, ok := objs[1].(*corev1.PersistentVolumeClaim)
	if !ok || pvc.Spec.AccessModes[0] != corev1.ReadWriteMany || pvc.Spec.Resources.Requests.Storage().String() != "10Gi" || *pvc.Spec.StorageClassName != "nfs" {
		t.Fatalf("volume claim %+v", objs[1])
	}
	run, ok := objs[2].(*batchv1.Job)
	if !ok || run.Spec.CompletionMode == nil || *run.Spec.CompletionMode != batchv1.IndexedCompletion ||
		*run.Spec.Completions != 4 || *run.Spec.Parallelism != 4 || *run.Spec.BackoffLimit != 0 {
		t.Fatalf("shard job %+v", objs[2])
	}
	pod := run.Spec.Template.Spec
	c := pod.Containers[0]
	args := strings.Join(c.Args, " ")
	for _, want := range []string{"run --target http://vllm.serving.svc:8000", "--shard $(JOB_COMPLETION_INDEX)/4",
		"--start-at 2026-03-01T12:05:00Z", "-o /runs/shard-$(JOB_COMPLETION_INDEX)", "--contract /contract/contract.yaml", "--metrics http://vllm"} {
		if !strings.Contains(args, want) {
			t.Errorf("shard args %q lack %q", args, want)
		}
	}
	if c.Env[0].Name != "JOB_COMPLETION_INDEX" || c.Env[0].ValueFrom.FieldRef.FieldPath != "metadata.annotations['batch.kubernetes.io/job-completion-index']" {
		t.Errorf("index env %+v", c.Env[0])
	}
	if c.Env[1].ValueFrom.SecretKeyRef.Name != "llm-key" || pod.RestartPolicy != corev1.RestartPolicyNever || pod.Affinity.PodAntiAffinity == nil {
		t.Errorf("pod %+v", pod)
	}
	merge, ok := objs[3].(*batchv1.Job)
	if !ok {
		t.Fatalf("merge job %+v", objs[3])
	}
	margs := merge.Spec.Template.Spec.Containers[0].Args
	for i := 0; i < 4; i++ {
		if !slices.Contains(margs, ShardDir(i)) {
			t.Errorf("merge args %q lack %s", margs, ShardDir(i))
		}
	}
	if margs[0] != "merge" || margs[1] != "--wait" || margs[2] != "1h20m0s" || margs[len(margs)-1] != MergedDir {
		t.Errorf("merge args %q", margs)
	}
}

func TestManifestsRefuse(t *testing.T) {
	for _, f := range []func(*Job){
		func(j *Job) { j.Image = "" }, func(j *Job) { j.Target = "" }, func(j *Job) { j.Shards = 0 }, func(j *Job) { j.StartAt = time.Time{} },
	} {
		j := testJob()
		f(j)
		if _, err := j.Manifests(); err == nil {
			t.Errorf("%+v printed", j)
		}
	}
}

func TestLabel(t *testing.T) {
	for in, want := range map[string]string{"Soak (1 h)": "soak-1-h", "": "run", "---": "run", strings.Repeat("a", 60): strings.Repeat("a", 40)} {
		if got := label(in); got != want {
			t.Errorf("label(%q) = %q, want %q", in, got, want)
		}
	}
}

// The strict decoding is what catches a misspelt field: a manifest with one fails.
func TestStrictDecodingCatchesTypos(t *testing.T) {
	m, _ := testJob().Manifests()
	bad := bytes.Replace(m, []byte("completionMode:"), []byte("completionMod:"), 1)
	scheme := runtime.NewScheme()
	batchv1.AddToScheme(scheme)
	corev1.AddToScheme(scheme)
	dec := serializer.NewCodecFactory(scheme, serializer.EnableStrict).UniversalDeserializer()
	docs := bytes.Split(bad, []byte("\n---\n"))
	if _, _, err := dec.Decode(append(docs[3], '\n'), nil, nil); err == nil || !strings.Contains(err.Error(), "completionMod") {
		t.Fatalf("a misspelt field decoded: %v", err)
	}
}

// The image the manifests run: built static, as the user the pods run as.
func TestDockerfileMatchesManifests(t *testing.T) {
	b, err := os.ReadFile(filepath.Join("..", "Dockerfile"))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"CGO_ENABLED=0", "USER 65532:65532", `ENTRYPOINT ["/pel"]`, "./cmd/pel"} {
		if !strings.Contains(string(b), want) {
			t.Errorf("Dockerfile lacks %q", want)
		}
	}
}
