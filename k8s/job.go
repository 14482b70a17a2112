// Package k8s prints the Kubernetes manifests that run one contract as a sharded run on a
// cluster (pel k8s job): a ConfigMap holding the contract, a ReadWriteMany volume for the
// shards' run directories, an Indexed Job whose pod i runs pel run --shard i/N from a
// shared start time (JOB_COMPLETION_INDEX gives i), and a Job that waits for every shard's
// directory and merges them (pel merge). Kubernetes runs, retries nothing and spreads the
// pods over nodes; pel keeps the schedule, the statistics and their merge.
//
// The manifests are written from small structs of this package, not from k8s.io/api, so
// the pel binary does not carry the Kubernetes API types; the tests decode every document
// strictly into those types (an unknown or misspelt field fails), which is what the API
// server would accept.
package k8s

import (
	"bytes"
	"fmt"
	"regexp"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"
)

// Job describes the sharded run to print.
type Job struct {
	// Name prefixes every object (a DNS-1123 label; default from the contract's name).
	Name      string
	Namespace string // empty: kubectl's current namespace
	Image     string // a pel image (see Dockerfile)
	Target    string // the server every shard drives
	Shards    int
	// Contract is the contract's text, its name and planned duration (for the merge's wait).
	Contract     []byte
	ContractName string
	Duration     time.Duration
	// StartAt is the shared start: apply the manifests well before it (pods must be
	// scheduled, images pulled, clocks probed).
	StartAt time.Time
	// Storage is the volume's size (default 10Gi); StorageClass a class that offers
	// ReadWriteMany (NFS, EFS, Filestore...; empty: the cluster's default).
	Storage, StorageClass string
	// Metrics are engine /metrics URLs every shard samples (the merge keeps one shard's).
	Metrics []string
	// APIKeySecret names a Secret whose key "api-key" holds the API key (OPENAI_API_KEY).
	APIKeySecret string
	// Now is when the manifests are printed (zero: time.Now()); the merge job waits from it
	// until the run should have ended, plus a margin.
	Now time.Time
}

// Paths inside the pods.
const (
	contractDir = "/contract"
	runsDir     = "/runs"
	// indexEnv is set from the pod's completion-index annotation, explicitly, so that the
	// args can expand it as $(JOB_COMPLETION_INDEX) on any Kubernetes that runs Indexed Jobs.
	indexEnv = "JOB_COMPLETION_INDEX"
)

// ShardDir is the run directory of shard i on the volume; MergedDir the merged one.
func ShardDir(i int) string { return fmt.Sprintf("%s/shard-%d", runsDir, i) }

// MergedDir is where the merge job writes the merged run directory.
const MergedDir = runsDir + "/merged"

var labelRE = regexp.MustCompile(`[^a-z0-9-]+`)

// label makes a DNS-1123 label of at most 40 characters (objects get suffixes, pods more).
func label(s string) string {
	s = strings.Trim(labelRE.ReplaceAllString(strings.ToLower(s), "-"), "-")
	if len(s) > 40 {
		s = strings.Trim(s[:40], "-")
	}
	if s == "" {
		s = "run"
	}
	return s
}

// Check reports what makes j unprintable.
func (j *Job) Check() error {
	switch {
	case j.Image == "":
		return fmt.Errorf("no image: build one with the Dockerfile at the repository's root and push it (--image REGISTRY/pel:TAG)")
	case j.Target == "":
		return fmt.Errorf("no target (--target URL): the server every shard drives, reachable from the pods")
	case j.Shards < 1 || j.Shards > 10_000:
		return fmt.Errorf("--shards %d: want 1 to 10000", j.Shards)
	case len(j.Contract) == 0:
		return fmt.Errorf("no contract")
	case j.StartAt.IsZero():
		return fmt.Errorf("no start time")
	}
	return j.validate() // validate.go
}

// Manifests returns the YAML documents, separated by ---, with a header saying when to
// apply them and how to read the result.
func (j *Job) Manifests() ([]byte, error) {
	if err := j.Check(); err != nil {
		return nil, err
	}
	name := label(j.Name)
	if j.Name == "" {
		name = "pel-" + label(j.ContractName)
	}
	storage := j.Storage
	if storage == "" {
		storage = "10Gi"
	}
	start := j.StartAt.UTC().Format(time.RFC3339Nano)
	labels := map[string]string{"app.kubernetes.io/name": "pel", "pel.dev/run": name}
	meta := func(n string) objectMeta { return objectMeta{Name: n, Namespace: j.Namespace, Labels: labels} }
	volumes := []volume{
		{Name: "contract", ConfigMap: &configMapVolume{Name: name + "-contract"}},
		{Name: "runs", PersistentVolumeClaim: &pvcVolume{ClaimName: name + "-runs"}},
	}
	mounts := []volumeMount{{Name: "contract", MountPath: contractDir, ReadOnly: true}, {Name: "runs", MountPath: runsDir}}
	var env []envVar
	if j.APIKeySecret != "" {
		env = append(env, envVar{Name: "OPENAI_API_KEY", ValueFrom: &envSource{SecretKeyRef: &keyRef{Name: j.APIKeySecret, Key: "api-key"}}})
	}
	sec := &securityContext{RunAsNonRoot: true, RunAsUser: 65532, AllowPrivilegeEscalation: new(bool), ReadOnlyRootFilesystem: true}

	args := []string{"run", "--target", j.Target, "--contract", contractDir + "/contract.yaml",
		"--shard", fmt.Sprintf("$(%s)/%d", indexEnv, j.Shards), "--start-at", start,
		"-o", fmt.Sprintf("%s/shard-$(%s)", runsDir, indexEnv)}
	for _, m := range j.Metrics {
		args = append(args, "--metrics", m)
	}
	shardEnv := append([]envVar{{Name: indexEnv, ValueFrom: &envSource{FieldRef: &fieldRef{
		FieldPath: "metadata.annotations['batch.kubernetes.io/job-completion-index']"}}}}, env...)
	n := int32(j.Shards)
	zero := int32(0)
	indexed := "Indexed"
	run := job{APIVersion: "batch/v1", Kind: "Job", Metadata: meta(name), Spec: jobSpec{
		CompletionMode: &indexed, Completions: &n, Parallelism: &n,
		// A shard that fails is not run again: a rerun would start late and load twice.
		BackoffLimit: &zero,
		Template: podTemplate{Metadata: objectMeta{Labels: labels}, Spec: podSpec{
			RestartPolicy: "Never",
			// Shards on different nodes: the point of sharding is more machines.
			Affinity: &affinity{PodAntiAffinity: &podAntiAffinity{Preferred: []weightedTerm{{Weight: 100, Term: affinityTerm{
				LabelSelector: labelSelector{MatchLabels: map[string]string{"pel.dev/run": name}}, TopologyKey: "kubernetes.io/hostname"}}}}},
			Containers: []container{{Name: "pel", Image: j.Image, Args: args, Env: shardEnv, VolumeMounts: mounts, SecurityContext: sec}},
			Volumes:    volumes,
		}},
	}}
	var dirs []string
	for i := 0; i < j.Shards; i++ {
		dirs = append(dirs, ShardDir(i))
	}
	now := j.Now
	if now.IsZero() {
		now = time.Now()
	}
	wait := j.StartAt.Sub(now) + j.Duration + 15*time.Minute
	mergeArgs := append(append([]string{"merge", "--wait", wait.Round(time.Minute).String()}, dirs...), "-o", MergedDir)
	one := int32(1)
	merge := job{APIVersion: "batch/v1", Kind: "Job", Metadata: meta(name + "-merge"), Spec: jobSpec{
		Completions: &one, Parallelism: &one, BackoffLimit: &zero,
		Template: podTemplate{Metadata: objectMeta{Labels: labels}, Spec: podSpec{
			RestartPolicy: "Never",
			Containers:    []container{{Name: "merge", Image: j.Image, Args: mergeArgs, VolumeMounts: mounts, SecurityContext: sec}},
			Volumes:       volumes,
		}},
	}}
	cm := configMap{APIVersion: "v1", Kind: "ConfigMap", Metadata: meta(name + "-contract"), Data: map[string]string{"contract.yaml": string(j.Contract)}}
	pvc := persistentVolumeClaim{APIVersion: "v1", Kind: "PersistentVolumeClaim", Metadata: meta(name + "-runs"), Spec: pvcSpec{
		AccessModes: []string{"ReadWriteMany"}, Resources: resources{Requests: map[string]string{"storage": storage}}}}
	if j.StorageClass != "" {
		pvc.Spec.StorageClassName = &j.StorageClass
	}
	var b bytes.Buffer
	fmt.Fprintf(&b, "# pel: %d shards of contract %q against %s, schedule from %s.\n", j.Shards, j.ContractName, j.Target, start)
	fmt.Fprintf(&b, "# Apply before then (pods must be scheduled and pull %s first): kubectl apply -f THIS_FILE\n", j.Image)
	fmt.Fprintf(&b, "# The verdict: kubectl logs -f job/%s-merge   The run directory: %s on volume %s-runs.\n", name, MergedDir, name)
	for _, doc := range []any{cm, pvc, run, merge} {
		b.WriteString("---\n")
		enc := yaml.NewEncoder(&b)
		enc.SetIndent(2)
		if err := enc.Encode(doc); err != nil {
			return nil, err
		}
		enc.Close()
	}
	return b.Bytes(), nil
}

// The subset of the Kubernetes API these manifests use, with its field names.

type objectMeta struct {
	Name      string            `yaml:"name,omitempty"`
	Namespace string            `yaml:"namespace,omitempty"`
	Labels    map[string]string `yaml:"labels,omitempty"`
}

type configMap struct {
	APIVersion string            `yaml:"apiVersion"`
	Kind       string            `yaml:"kind"`
	Metadata   objectMeta        `yaml:"metadata"`
	Data       map[string]string `yaml:"data"`
}

type persistentVolumeClaim struct {
	APIVersion string     `yaml:"apiVersion"`
	Kind       string     `yaml:"kind"`
	Metadata   objectMeta `yaml:"metadata"`
	Spec       pvcSpec    `yaml:"spec"`
}

type pvcSpec struct {
	AccessModes      []string  `yaml:"accessModes"`
	StorageClassName *string   `yaml:"storageClassName,omitempty"`
	Resources        resources `yaml:"resources"`
}

type resources struct {
	Requests map[string]string `yaml:"requests"`
}

type job struct {
	APIVersion string     `yaml:"apiVersion"`
	Kind       string     `yaml:"kind"`
	Metadata   objectMeta `yaml:"metadata"`
	Spec       jobSpec    `yaml:"spec"`
}

type jobSpec struct {
	CompletionMode *string     `yaml:"completionMode,omitempty"`
	Completions    *int32      `yaml:"completions,omitempty"`
	Parallelism    *int32      `yaml:"parallelism,omitempty"`
	BackoffLimit   *int32      `yaml:"backoffLimit,omitempty"`
	Template       podTemplate `yaml:"template"`
}

type podTemplate struct {
	Metadata objectMeta `yaml:"metadata"`
	Spec     podSpec    `yaml:"spec"`
}

type podSpec struct {
	RestartPolicy string      `yaml:"restartPolicy"`
	Affinity      *affinity   `yaml:"affinity,omitempty"`
	Containers    []container `yaml:"containers"`
	Volumes       []volume    `yaml:"volumes"`
}

type affinity struct {
	PodAntiAffinity *podAntiAffinity `yaml:"podAntiAffinity,omitempty"`
}

type podAntiAffinity struct {
	Preferred []weightedTerm `yaml:"preferredDuringSchedulingIgnoredDuringExecution"`
}

type weightedTerm struct {
	Weight int32        `yaml:"weight"`
	Term   affinityTerm `yaml:"podAffinityTerm"`
}

type affinityTerm struct {
	LabelSelector labelSelector `yaml:"labelSelector"`
	TopologyKey   string        `yaml:"topologyKey"`
}

type labelSelector struct {
	MatchLabels map[string]string `yaml:"matchLabels"`
}

type container struct {
	Name            string           `yaml:"name"`
	Image           string           `yaml:"image"`
	Args            []string         `yaml:"args"`
	Env             []envVar         `yaml:"env,omitempty"`
	VolumeMounts    []volumeMount    `yaml:"volumeMounts"`
	SecurityContext *securityContext `yaml:"securityContext,omitempty"`
}

type securityContext struct {
	RunAsNonRoot             bool  `yaml:"runAsNonRoot"`
	RunAsUser                int64 `yaml:"runAsUser"`
	AllowPrivilegeEscalation *bool `yaml:"allowPrivilegeEscalation"`
	ReadOnlyRootFilesystem   bool  `yaml:"readOnlyRootFilesystem"`
}

type envVar struct {
	Name      string     `yaml:"name"`
	Value     string     `yaml:"value,omitempty"`
	ValueFrom *envSource `yaml:"valueFrom,omitempty"`
}

type envSource struct {
	FieldRef     *fieldRef `yaml:"fieldRef,omitempty"`
	SecretKeyRef *keyRef   `yaml:"secretKeyRef,omitempty"`
}

type fieldRef struct {
	FieldPath string `yaml:"fieldPath"`
}

type keyRef struct {
	Name string `yaml:"name"`
	Key  string `yaml:"key"`
}

type volumeMount struct {
	Name      string `yaml:"name"`
	MountPath string `yaml:"mountPath"`
	ReadOnly  bool   `yaml:"readOnly,omitempty"`
}

type volume struct {
	Name                  string           `yaml:"name"`
	ConfigMap             *configMapVolume `yaml:"configMap,omitempty"`
	PersistentVolumeClaim *pvcVolume       `yaml:"persistentVolumeClaim,omitempty"`
}

type configMapVolume struct {
	Name string `yaml:"name"`
}

type pvcVolume struct {
	ClaimName string `yaml:"claimName"`
}
