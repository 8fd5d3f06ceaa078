CREATE TABLE `alert_rules` (
	`team_id` text NOT NULL,
	`scope` text NOT NULL,
	`event` text NOT NULL,
	`enabled` integer NOT NULL,
	`updated_at` text NOT NULL,
	PRIMARY KEY(`team_id`, `scope`, `event`)
);
