import seccompDefault from "./seccomp-default.json" with { type: "json" };

/**
 * The seccomp profile of every container the agent starts from a pod's image (the pod itself, its
 * helpers, and everything `docker exec`/`runc exec` runs in them, which inherits it): the engine's
 * default profile (./seccomp-default.json, moby v20.10.24's `profiles/seccomp/default.json`,
 * Apache-2.0) with one change. `ioctl` is allowed except for requests of type 0x94, the btrfs
 * ioctls, which fall to the profile's default action (EPERM).
 *
 * Why: a pod's home is a btrfs subvolume whose size the host limits (../disk/pod-disk.ts). A
 * subvolume or snapshot the tenant makes inside it with the plain ioctls joins that limit, but the
 * `_V2` ones take an explicit, empty qgroup list from an unprivileged caller and make a subvolume
 * nothing counts. No app needs btrfs ioctls; the generic clone ioctls that share the type
 * (FICLONE, FICLONERANGE, FIDEDUPERANGE: `cp --reflink`) stay allowed.
 *
 * The request is matched on bits 8–15 only (the type), which the kernel reads after truncating the
 * request to 32 bits, so high bits set by a caller change nothing. libseccomp drops a conditional
 * rule for a syscall that also has an unconditional one (and a conditional refusal would shadow the
 * clone ioctls' allow rules), so `ioctl` leaves the default's allow list and comes back as allow rules
 * for every other type plus the three clone requests; the rest is refused by the default action.
 */

const BTRFS_IOCTL_TYPE = 0x94;
/** FICLONE, FICLONERANGE, FIDEDUPERANGE: type 0x94, but generic file-system calls */
const GENERIC_CLONE_IOCTLS = [0x40049409, 0x4020940d, 0xc0189436];

interface SeccompRule {
  names: string[];
  action: string;
  args?: { index: number; value: number; valueTwo?: number; op: string }[] | null;
  [key: string]: unknown;
}
interface SeccompProfile {
  defaultAction: string;
  syscalls: SeccompRule[];
  [key: string]: unknown;
}

export function podSeccompProfile(base: SeccompProfile): SeccompProfile {
  const syscalls = base.syscalls.map((rule) => ({ ...rule, names: rule.names.filter((n) => n !== "ioctl") }));
  // "type != 0x94" as a union of 8 single-bit tests: a request whose type differs from 0x94 in
  // bit b matches the rule for b. (One rule per allowed type, 255 of them, made every `docker exec`
  // some 130 ms slower: runc compiles the filter for each process.)
  const byType: SeccompRule[] = [];
  for (let bit = 8; bit < 16; bit++) {
    const mask = 1 << bit;
    byType.push({
      names: ["ioctl"],
      action: "SCMP_ACT_ALLOW",
      args: [
        {
          index: 1,
          value: mask,
          valueTwo: (BTRFS_IOCTL_TYPE << 8) & mask ? 0 : mask,
          op: "SCMP_CMP_MASKED_EQ",
        },
      ],
    });
  }
  const clones: SeccompRule[] = GENERIC_CLONE_IOCTLS.map((request) => ({
    names: ["ioctl"],
    action: "SCMP_ACT_ALLOW",
    args: [{ index: 1, value: request, op: "SCMP_CMP_EQ" }],
  }));
  return {
    ...base,
    syscalls: [...syscalls.filter((r) => r.names.length > 0), ...byType, ...clones],
  };
}

// Imported, not read next to this file: the agent runs as one bundle (scripts/build-agent.ts).
const base = seccompDefault as SeccompProfile;

/** `SecurityOpt` entries of a container made from a pod's image */
export const POD_SECURITY_OPT = ["no-new-privileges", `seccomp=${JSON.stringify(podSeccompProfile(base))}`];
