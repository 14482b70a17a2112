package main

import (
	"os"
	"time"

	"github.com/spf13/cobra"

	"github.com/pel-ladder/pel/contract"
	"github.com/pel-ladder/pel/k8s"
)

func init() { subcommands = append(subcommands, newK8sCmd) }

func newK8sCmd(a *app) *cobra.Command {
	root := &cobra.Command{
		Use:   "k8s",
		Short: "Print Kubernetes manifests that run a contract from many machines",
	}
	var (
		j                   k8s.Job
		contractFile, start string
		startIn             time.Duration
	)
	job := &cobra.Command{
		Use:   "job --contract FILE --target URL --shards N --image IMAGE",
		Short: "Print an Indexed Job of N shards, its contract, a volume and the job that merges them",
		Long: `job prints, to apply with kubectl apply -f: a ConfigMap holding the contract; a
ReadWriteMany PersistentVolumeClaim for the run directories; an Indexed Job of N pods, pod i
running pel run --shard i/N (JOB_COMPLETION_INDEX) from one shared start time into
/runs/shard-i; and a Job that waits for every shard and runs pel merge into /runs/merged,
whose log is the verdict. The start time is --start-at, or --start-in from now (default 2m):
apply the manifests before it, leaving time to schedule the pods and pull the image.
Build the image with the Dockerfile at the repository's root.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if contractFile == "" {
				return usageErrorf("k8s job needs --contract FILE")
			}
			c, err := contract.Load(contractFile)
			if err != nil {
				return usageError(err)
			}
			raw, err := os.ReadFile(contractFile)
			if err != nil {
				return usageError(err)
			}
			j.Contract, j.ContractName, j.Duration = raw, c.Name, c.Duration
			j.Now = time.Now()
			j.StartAt = j.Now.Add(startIn).Truncate(time.Second)
			if start != "" {
				if j.StartAt, err = parseStartAt(start, j.Now); err != nil {
					return usageErrorf("--start-at: %v", err)
				}
			}
			m, err := j.Manifests()
			if err != nil {
				return usageError(err)
			}
			_, err = a.stdout.Write(m)
			return err
		},
	}
	f := job.Flags()
	f.StringVar(&contractFile, "contract", "", "workload contract `FILE`")
	f.StringVar(&j.Target, "target", "", "base `URL` of the server, as the pods reach it (e.g. http://vllm.serving.svc:8000)")
	f.IntVar(&j.Shards, "shards", 0, "number of shards (pods), each on its own node when the cluster allows")
	f.StringVar(&j.Image, "image", "", "pel `IMAGE` (built from the Dockerfile)")
	f.StringVar(&start, "start-at", "", "shared start `TIME` (RFC 3339 or +DURATION); default now + --start-in")
	f.DurationVar(&startIn, "start-in", 2*time.Minute, "start this long after printing, when --start-at is not given")
	f.StringVar(&j.Name, "name", "", "name prefix of the objects (default pel-<contract name>)")
	f.StringVar(&j.Namespace, "namespace", "", "namespace (default: kubectl's current one)")
	f.StringVar(&j.Storage, "storage", "10Gi", "size of the volume holding the run directories (~1 KB per task per shard, twice over with the merge)")
	f.StringVar(&j.StorageClass, "storage-class", "", "storage class offering ReadWriteMany (NFS, EFS, Filestore...; default: the cluster's)")
	f.StringArrayVar(&j.Metrics, "metrics", nil, "engine /metrics `URL` every shard samples (repeatable)")
	f.StringVar(&j.APIKeySecret, "api-key-secret", "", "Secret `NAME` whose key api-key holds the API key")
	root.AddCommand(job)
	return root
}
