CREATE TABLE `pod_resizes` (
	`pod_id` text PRIMARY KEY NOT NULL,
	`token` text NOT NULL,
	`host_id` text NOT NULL,
	`from_plan` text NOT NULL,
	`to_plan` text NOT NULL,
	`cpu` real NOT NULL,
	`memory_mb` integer NOT NULL,
	`disk_gb` integer NOT NULL,
	`finishing` integer DEFAULT false NOT NULL,
	`settle_after` text NOT NULL,
	`created_at` text NOT NULL
);
--> statement-breakpoint
CREATE UNIQUE INDEX `pod_resizes_token_unique` ON `pod_resizes` (`token`);--> statement-breakpoint
CREATE INDEX `pod_resizes_settle_idx` ON `pod_resizes` (`settle_after`);