DROP INDEX `domains_domain_idx`;--> statement-breakpoint
ALTER TABLE `domains` ADD `checked_at` text;--> statement-breakpoint
ALTER TABLE `domains` ADD `missing_since` text;--> statement-breakpoint
CREATE UNIQUE INDEX `domains_verified_domain_idx` ON `domains` (`domain`) WHERE status = 'verified';--> statement-breakpoint
CREATE UNIQUE INDEX `domains_pod_domain_idx` ON `domains` (`pod_id`,`domain`);--> statement-breakpoint
CREATE INDEX `domains_name_idx` ON `domains` (`domain`);--> statement-breakpoint
CREATE INDEX `domains_recheck_idx` ON `domains` (`checked_at`) WHERE status = 'verified';