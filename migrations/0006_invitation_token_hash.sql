-- Invitation tokens are stored as their SHA-256 from now on. SQL cannot hash the tokens already
-- there, so no raw token is kept: every existing row's token is replaced by a value no request can
-- match, and pending invitations expire now (the owner invites again; accepted ones stay as records).
UPDATE `invitations` SET `token` = 'invalidated:' || `id`;--> statement-breakpoint
UPDATE `invitations` SET `expires_at` = strftime('%Y-%m-%dT%H:%M:%fZ', 'now') WHERE `accepted_by` IS NULL;--> statement-breakpoint
DROP INDEX `invitations_token_unique`;--> statement-breakpoint
ALTER TABLE `invitations` RENAME COLUMN `token` TO `token_hash`;--> statement-breakpoint
CREATE UNIQUE INDEX `invitations_token_hash_unique` ON `invitations` (`token_hash`);
