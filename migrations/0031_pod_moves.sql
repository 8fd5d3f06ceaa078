CREATE TABLE `operator_tokens` (
	`id` text PRIMARY KEY NOT NULL,
	`token_hash` text NOT NULL,
	`expires_at` text NOT NULL,
	`created_at` text NOT NULL
);
--> statement-breakpoint
CREATE UNIQUE INDEX `operator_tokens_token_hash_unique` ON `operator_tokens` (`token_hash`);--> statement-breakpoint
CREATE TABLE `pod_moves` (
	`id` text PRIMARY KEY NOT NULL,
	`pod_id` text NOT NULL,
	`pod_name` text NOT NULL,
	`kind` text NOT NULL,
	`status` text NOT NULL,
	`from_host_id` text NOT NULL,
	`to_host_id` text,
	`ssh_port` integer,
	`backup_id` text,
	`backup_at` text,
	`downtime_ms` integer,
	`reason` text,
	`created_at` text NOT NULL,
	`ended_at` text
);
--> statement-breakpoint
CREATE INDEX `pod_moves_from_host_idx` ON `pod_moves` (`from_host_id`,`created_at`);--> statement-breakpoint
CREATE UNIQUE INDEX `pod_moves_one_open_idx` ON `pod_moves` (`pod_id`) WHERE status IN ('queued', 'moving');