ALTER TABLE `invitations` ADD `accepted_by` text REFERENCES users(id);--> statement-breakpoint
ALTER TABLE `invitations` ADD `accepted_at` text;