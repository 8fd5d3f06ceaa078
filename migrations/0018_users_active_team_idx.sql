-- Accounts by their active team: a departing member or a deleted team moves everyone who had it
-- active back to their own team (resetActiveTeamStatement), which without it read every account.
CREATE INDEX `users_active_team_idx` ON `users` (`active_team_id`);