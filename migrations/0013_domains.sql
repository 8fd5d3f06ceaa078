CREATE TABLE `domains` (
	`id` text PRIMARY KEY NOT NULL,
	`pod_id` text NOT NULL,
	`domain` text NOT NULL,
	`status` text NOT NULL,
	`verification_token` text NOT NULL,
	`created_at` text NOT NULL,
	`verified_at` text
);
--> statement-breakpoint
CREATE UNIQUE INDEX `domains_domain_idx` ON `domains` (`domain`);