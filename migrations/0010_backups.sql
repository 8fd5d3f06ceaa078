CREATE TABLE `backups` (
	`id` text PRIMARY KEY NOT NULL,
	`pod_id` text NOT NULL,
	`note` text,
	`status` text NOT NULL,
	`trigger` text NOT NULL,
	`size` integer,
	`sha256` text,
	`object_key` text NOT NULL,
	`uploaded_bytes` integer,
	`uploaded_sha256` text,
	`error` text,
	`verified_at` text,
	`verify_error` text,
	`created_at` text NOT NULL,
	`completed_at` text
);
--> statement-breakpoint
CREATE INDEX `backups_pod_created_idx` ON `backups` (`pod_id`,`created_at`);--> statement-breakpoint
CREATE INDEX `backups_status_created_idx` ON `backups` (`status`,`created_at`);--> statement-breakpoint
CREATE UNIQUE INDEX `backups_one_in_progress_idx` ON `backups` (`pod_id`) WHERE status = 'in_progress';--> statement-breakpoint
CREATE TABLE `backup_schedules` (
	`pod_id` text PRIMARY KEY NOT NULL,
	`enabled` integer NOT NULL,
	`frequency` text NOT NULL,
	`retention` integer,
	`next_run_at` text,
	`last_run_at` text,
	`created_at` text NOT NULL,
	`updated_at` text NOT NULL
);
--> statement-breakpoint
CREATE INDEX `backup_schedules_next_run_idx` ON `backup_schedules` (`enabled`,`next_run_at`);--> statement-breakpoint
CREATE TABLE `backup_restores` (
	`id` text PRIMARY KEY NOT NULL,
	`pod_id` text NOT NULL,
	`backup_id` text NOT NULL,
	`status` text NOT NULL,
	`error` text,
	`dump_path` text,
	`created_at` text NOT NULL,
	`finished_at` text
);
--> statement-breakpoint
CREATE INDEX `backup_restores_status_created_idx` ON `backup_restores` (`status`,`created_at`);--> statement-breakpoint
CREATE UNIQUE INDEX `backup_restores_one_running_idx` ON `backup_restores` (`pod_id`) WHERE status = 'running';
