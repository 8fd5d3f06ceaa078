CREATE TABLE `custom_hostname_removals` (
	`id` text PRIMARY KEY NOT NULL,
	`hostname` text NOT NULL,
	`pod_id` text NOT NULL,
	`attempts` integer DEFAULT 0 NOT NULL,
	`last_error` text NOT NULL,
	`created_at` text NOT NULL,
	`attempted_at` text NOT NULL
);
--> statement-breakpoint
CREATE INDEX `custom_hostname_removals_attempted_idx` ON `custom_hostname_removals` (`attempted_at`);--> statement-breakpoint
ALTER TABLE `domains` ADD `tls_status` text;--> statement-breakpoint
ALTER TABLE `domains` ADD `tls_hostname_id` text;--> statement-breakpoint
ALTER TABLE `domains` ADD `tls_checked_at` text;--> statement-breakpoint
CREATE INDEX `domains_tls_poll_idx` ON `domains` (`tls_checked_at`) WHERE status = 'verified';