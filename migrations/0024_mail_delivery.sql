ALTER TABLE `mail_outbox` ADD `html` text;--> statement-breakpoint
ALTER TABLE `mail_outbox` ADD `kind` text DEFAULT 'other' NOT NULL;--> statement-breakpoint
ALTER TABLE `mail_outbox` ADD `status` text DEFAULT 'outbox' NOT NULL;--> statement-breakpoint
ALTER TABLE `mail_outbox` ADD `attempts` integer DEFAULT 0 NOT NULL;--> statement-breakpoint
ALTER TABLE `mail_outbox` ADD `last_error` text;--> statement-breakpoint
ALTER TABLE `mail_outbox` ADD `provider_id` text;--> statement-breakpoint
ALTER TABLE `mail_outbox` ADD `sent_at` text;--> statement-breakpoint
CREATE INDEX `mail_outbox_status_created_idx` ON `mail_outbox` (`status`,`created_at`);