import { describe, expect, it } from "vitest";
import { missingRules } from "../../agent/egress/rules";

// `iptables -S` as ensure-egress.sh leaves it beside Docker 20.10's own chains (trimmed).
const INSTALLED = `-P INPUT ACCEPT
-P FORWARD DROP
-N DOCKER-USER
-N PODHOST-EGRESS
-N PODHOST-HOST
-A INPUT -i phb+ -j PODHOST-HOST
-A INPUT -i br-0123456789ab -j PODHOST-HOST
-A FORWARD -j DOCKER-USER
-A DOCKER-USER -i br-0123456789ab -j PODHOST-EGRESS
-A DOCKER-USER -i phb+ -j PODHOST-EGRESS
-A DOCKER-USER -j RETURN
-A PODHOST-EGRESS -m conntrack --ctstate RELATED,ESTABLISHED -j RETURN
-A PODHOST-EGRESS -o phb+ -j REJECT --reject-with icmp-admin-prohibited
-A PODHOST-EGRESS -d 169.254.0.0/16 -j REJECT --reject-with icmp-admin-prohibited
-A PODHOST-EGRESS -d 10.0.0.0/8 -j REJECT --reject-with icmp-admin-prohibited
-A PODHOST-EGRESS -d 172.16.0.0/12 -j REJECT --reject-with icmp-admin-prohibited
-A PODHOST-EGRESS -d 192.168.0.0/16 -j REJECT --reject-with icmp-admin-prohibited
-A PODHOST-EGRESS -d 100.64.0.0/10 -j REJECT --reject-with icmp-admin-prohibited
-A PODHOST-EGRESS -j RETURN
-A PODHOST-HOST -m conntrack --ctstate RELATED,ESTABLISHED -j RETURN
-A PODHOST-HOST -j REJECT --reject-with icmp-admin-prohibited
`;

describe("the agent's check of the egress rules", () => {
  it("finds nothing missing when the script's rules are there", () => {
    expect(missingRules(INSTALLED, 4, ["br-0123456789ab"])).toEqual([]);
  });

  it("names the jumps a legacy bridge still lacks", () => {
    expect(missingRules(INSTALLED, 4, ["br-ba9876543210"])).toEqual([
      "IPv4 -A INPUT -i br-ba9876543210 -j PODHOST-HOST",
      "IPv4 -A DOCKER-USER -i br-ba9876543210 -j PODHOST-EGRESS",
    ]);
  });

  it("notices a flushed chain, a lost jump, and a ruleset wiped by a firewall reload", () => {
    const flushed = INSTALLED.split("\n")
      .filter((l) => !l.startsWith("-A PODHOST-EGRESS -d 169.254.") && !l.startsWith("-A INPUT -i phb+"))
      .join("\n");
    expect(missingRules(flushed, 4, [])).toEqual([
      "IPv4 -A PODHOST-EGRESS -d 169.254.0.0/16 -j REJECT",
      "IPv4 -A INPUT -i phb+ -j PODHOST-HOST",
    ]);
    expect(missingRules("-P INPUT ACCEPT\n", 4, []).length).toBe(9);
  });

  it("expects the jump from FORWARD where the engine keeps no DOCKER-USER (IPv6 on Docker 20.10)", () => {
    const v6 = `-N PODHOST-EGRESS
-N PODHOST-HOST
-A INPUT -i phb+ -j PODHOST-HOST
-A FORWARD -i phb+ -j PODHOST-EGRESS
-A PODHOST-EGRESS -o phb+ -j REJECT --reject-with icmp6-adm-prohibited
-A PODHOST-EGRESS -d fc00::/7 -j REJECT --reject-with icmp6-adm-prohibited
-A PODHOST-EGRESS -d fe80::/10 -j REJECT --reject-with icmp6-adm-prohibited
-A PODHOST-HOST -j REJECT --reject-with icmp6-adm-prohibited`;
    expect(missingRules(v6, 6, [])).toEqual([]);
  });
});
