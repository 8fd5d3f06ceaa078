-- A user's personal team is found by its owner: on every signed-in request that misses the isolate's
-- credential cache (worker/services/auth/credentials.ts) and when members are moved back to their own
-- team (worker/services/teams/teams.ts). Without an index each of those read every team: bench/scale
-- measured it, 20,000 teams scanned per credential lookup at 100,000 pods.
CREATE INDEX `teams_owner_idx` ON `teams` (`owner_id`,`account_type`);
