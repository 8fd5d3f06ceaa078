import type { DockerClient } from "../../agent/docker/client";
import { prefixFilter } from "../../agent/docker/naming";

/**
 * Removes every container, volume and network labelled with a floor's `prefix`: what a bench's bare
 * dockerode floor made, also when a run failed half-way. Each removal is best effort.
 */
export async function removePrefixed(docker: DockerClient, prefix: string): Promise<void> {
  const filters = prefixFilter(prefix);
  const quiet = () => undefined;
  for (const c of await docker.listContainers({ all: true, filters })) {
    await docker.getContainer(c.Id).remove({ force: true }).catch(quiet);
  }
  for (const v of (await docker.listVolumes({ filters })).Volumes ?? []) {
    await docker.getVolume(v.Name).remove().catch(quiet);
  }
  for (const net of await docker.listNetworks({ filters })) {
    await docker.getNetwork(net.Id).remove().catch(quiet);
  }
}
