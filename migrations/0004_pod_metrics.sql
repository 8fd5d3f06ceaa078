CREATE TABLE `pod_metrics` (
	`pod_id` text NOT NULL,
	`recorded_at` text NOT NULL,
	`cpu_usage` real NOT NULL,
	`memory_usage` real NOT NULL,
	`storage_used` integer NOT NULL,
	`network_in` integer NOT NULL,
	`network_out` integer NOT NULL,
	PRIMARY KEY(`pod_id`, `recorded_at`)
);
--> statement-breakpoint
CREATE INDEX `pod_metrics_recorded_idx` ON `pod_metrics` (`recorded_at`);--> statement-breakpoint
CREATE TABLE `pod_metrics_hourly` (
	`pod_id` text NOT NULL,
	`hour` text NOT NULL,
	`cpu_usage` real NOT NULL,
	`memory_usage` real NOT NULL,
	`storage_used` integer NOT NULL,
	`network_in` integer NOT NULL,
	`network_out` integer NOT NULL,
	`samples` integer NOT NULL,
	PRIMARY KEY(`pod_id`, `hour`)
);
--> statement-breakpoint
CREATE INDEX `pod_metrics_hourly_hour_idx` ON `pod_metrics_hourly` (`hour`);