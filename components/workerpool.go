package components

import (
	"fmt"

	"github.com/pulumi/pulumi-gcp/sdk/v8/go/gcp/cloudrunv2"
	"github.com/pulumi/pulumi/sdk/v3/go/pulumi"
)

// A consumer that only pulls needs no HTTP endpoint: with
// consumer.workerPool it runs on a Cloud Run worker pool, which has none,
// takes no requests and runs a fixed number of instances (minInstances)
// with their CPU always allocated. Its containers are the service's
// (declareConsumer builds them once), converted field by field by
// workerPoolContainer: every field pulumi-gcp v8's worker pool container
// has is carried (name, image, command, args, env, limits, volume mounts,
// working directory, dependsOn); the service fields it lacks, and what
// stands in for each, are listed in poolLacks (workerpool_internal_test.go),
// which holds the two types to this.

// workerPoolArgs are the settings of the consumer's worker pool taken from
// what its service would have been (svc), so the two never drift.
func workerPoolArgs(svc *cloudrunv2.ServiceArgs, instances int) (*cloudrunv2.WorkerPoolArgs, error) {
	t := svc.Template.(*cloudrunv2.ServiceTemplateArgs)
	containers := cloudrunv2.WorkerPoolTemplateContainerArray{}
	for _, c := range t.Containers.(cloudrunv2.ServiceTemplateContainerArray) {
		pc, err := workerPoolContainer(c.(*cloudrunv2.ServiceTemplateContainerArgs))
		if err != nil {
			return nil, err
		}
		containers = append(containers, pc)
	}
	tmpl := &cloudrunv2.WorkerPoolTemplateArgs{
		ServiceAccount: t.ServiceAccount,
		Labels:         t.Labels,
		Containers:     containers,
	}
	if v, ok := t.VpcAccess.(*cloudrunv2.ServiceTemplateVpcAccessArgs); ok && v != nil {
		access := &cloudrunv2.WorkerPoolTemplateVpcAccessArgs{Egress: v.Egress}
		nics := cloudrunv2.WorkerPoolTemplateVpcAccessNetworkInterfaceArray{}
		for _, n := range v.NetworkInterfaces.(cloudrunv2.ServiceTemplateVpcAccessNetworkInterfaceArray) {
			nic := n.(*cloudrunv2.ServiceTemplateVpcAccessNetworkInterfaceArgs)
			nics = append(nics, &cloudrunv2.WorkerPoolTemplateVpcAccessNetworkInterfaceArgs{Network: nic.Network, Subnetwork: nic.Subnetwork, Tags: nic.Tags})
		}
		access.NetworkInterfaces = nics
		tmpl.VpcAccess = access
	}
	if vols, ok := t.Volumes.(cloudrunv2.ServiceTemplateVolumeArray); ok {
		out := cloudrunv2.WorkerPoolTemplateVolumeArray{}
		for _, v := range vols {
			vol := v.(*cloudrunv2.ServiceTemplateVolumeArgs)
			sql := vol.CloudSqlInstance.(*cloudrunv2.ServiceTemplateVolumeCloudSqlInstanceArgs)
			out = append(out, &cloudrunv2.WorkerPoolTemplateVolumeArgs{
				Name:             vol.Name,
				CloudSqlInstance: &cloudrunv2.WorkerPoolTemplateVolumeCloudSqlInstanceArgs{Instances: sql.Instances},
			})
		}
		tmpl.Volumes = out
	}
	return &cloudrunv2.WorkerPoolArgs{
		Project:            svc.Project,
		Location:           svc.Location,
		Name:               svc.Name,
		Description:        svc.Description,
		Labels:             svc.Labels,
		DeletionProtection: svc.DeletionProtection,
		// No launchStage: worker pools are GA, the field is optional and
		// computed, and the provider reads back the stage actually used, so a
		// stage sent (BETA) would differ from it on every `up`.
		Scaling: &cloudrunv2.WorkerPoolScalingArgs{
			ScalingMode:         pulumi.String("MANUAL"),
			ManualInstanceCount: pulumi.Int(instances),
		},
		Template: tmpl,
	}, nil
}

// workerPoolContainer is the worker pool's form of a service container:
// every field both have, and an error for a field set that a worker pool
// cannot take and nothing replaces (poolLacks).
func workerPoolContainer(c *cloudrunv2.ServiceTemplateContainerArgs) (*cloudrunv2.WorkerPoolTemplateContainerArgs, error) {
	if c.BaseImageUri != nil {
		return nil, fmt.Errorf("container %v: baseImageUri (automatic base image updates) cannot be declared on a worker pool", c.Name)
	}
	envs := cloudrunv2.WorkerPoolTemplateContainerEnvArray{}
	if list, ok := c.Envs.(cloudrunv2.ServiceTemplateContainerEnvArray); ok {
		for _, e := range list {
			env := e.(*cloudrunv2.ServiceTemplateContainerEnvArgs)
			out := &cloudrunv2.WorkerPoolTemplateContainerEnvArgs{Name: env.Name, Value: env.Value}
			if src, ok := env.ValueSource.(*cloudrunv2.ServiceTemplateContainerEnvValueSourceArgs); ok && src != nil {
				ref := src.SecretKeyRef.(*cloudrunv2.ServiceTemplateContainerEnvValueSourceSecretKeyRefArgs)
				out.ValueSource = &cloudrunv2.WorkerPoolTemplateContainerEnvValueSourceArgs{
					SecretKeyRef: &cloudrunv2.WorkerPoolTemplateContainerEnvValueSourceSecretKeyRefArgs{Secret: ref.Secret, Version: ref.Version},
				}
			}
			envs = append(envs, out)
		}
	}
	out := &cloudrunv2.WorkerPoolTemplateContainerArgs{Name: c.Name, Image: c.Image, Commands: c.Commands, Args: c.Args, Envs: envs,
		WorkingDir: c.WorkingDir, DependsOns: c.DependsOns}
	if r, ok := c.Resources.(*cloudrunv2.ServiceTemplateContainerResourcesArgs); ok && r != nil {
		if r.StartupCpuBoost != nil {
			return nil, fmt.Errorf("container %v: startupCpuBoost cannot be declared on a worker pool", c.Name)
		}
		out.Resources = &cloudrunv2.WorkerPoolTemplateContainerResourcesArgs{Limits: r.Limits}
	}
	if mounts, ok := c.VolumeMounts.(cloudrunv2.ServiceTemplateContainerVolumeMountArray); ok {
		wm := cloudrunv2.WorkerPoolTemplateContainerVolumeMountArray{}
		for _, m := range mounts {
			vm := m.(*cloudrunv2.ServiceTemplateContainerVolumeMountArgs)
			wm = append(wm, &cloudrunv2.WorkerPoolTemplateContainerVolumeMountArgs{Name: vm.Name, MountPath: vm.MountPath})
		}
		out.VolumeMounts = wm
	}
	return out, nil
}

// declareWorkerPool declares the consumer's worker pool from what its
// service would have been.
func declareWorkerPool(ctx *pulumi.Context, name string, svc *cloudrunv2.ServiceArgs, instances int, opts ...pulumi.ResourceOption) (*cloudrunv2.WorkerPool, error) {
	args, err := workerPoolArgs(svc, instances)
	if err != nil {
		return nil, fmt.Errorf("consumer worker pool %s: %w", name, err)
	}
	pool, err := cloudrunv2.NewWorkerPool(ctx, name, args, opts...)
	if err != nil {
		return nil, fmt.Errorf("declare consumer worker pool %s: %w", name, err)
	}
	return pool, nil
}
