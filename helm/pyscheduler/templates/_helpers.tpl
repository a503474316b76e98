{{/*
Chart name, truncated to 63 characters (a DNS label).
*/}}
{{- define "pyscheduler.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" }}
{{- end }}

{{/*
Full name: <release>-<chart>, or <release> when it already contains the chart name; 63 characters.
*/}}
{{- define "pyscheduler.fullname" -}}
{{- if .Values.fullnameOverride }}
{{- .Values.fullnameOverride | trunc 63 | trimSuffix "-" }}
{{- else }}
{{- $name := default .Chart.Name .Values.nameOverride }}
{{- if contains $name .Release.Name }}
{{- .Release.Name | trunc 63 | trimSuffix "-" }}
{{- else }}
{{- printf "%s-%s" .Release.Name $name | trunc 63 | trimSuffix "-" }}
{{- end }}
{{- end }}
{{- end }}

{{/*
chart label value.
*/}}
{{- define "pyscheduler.chart" -}}
{{- printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" }}
{{- end }}

{{/*
Common labels.
*/}}
{{- define "pyscheduler.labels" -}}
helm.sh/chart: {{ include "pyscheduler.chart" . }}
{{ include "pyscheduler.selectorLabels" . }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/component: scheduler
app.kubernetes.io/managed-by: {{ .Release.Service }}
{{- with .Values.commonLabels }}
{{ toYaml . }}
{{- end }}
{{- end }}

{{/*
Selector labels.
*/}}
{{- define "pyscheduler.selectorLabels" -}}
app.kubernetes.io/name: {{ include "pyscheduler.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end }}

{{/*
Name of the ServiceAccount.
*/}}
{{- define "pyscheduler.serviceAccountName" -}}
{{- if .Values.serviceAccount.create }}
{{- default (include "pyscheduler.fullname" .) .Values.serviceAccount.name }}
{{- else }}
{{- default "default" .Values.serviceAccount.name }}
{{- end }}
{{- end }}

{{/*
Whether leader election is on ("true" or ""): with more than one replica, or when asked for.
*/}}
{{- define "pyscheduler.leaderElect" -}}
{{- if or .Values.leaderElection.enabled (gt (int .Values.replicaCount) 1) }}true{{- end }}
{{- end }}

{{/*
Name and namespace of the leader-election Lease.
*/}}
{{- define "pyscheduler.leaseName" -}}
{{- default (include "pyscheduler.fullname" .) .Values.leaderElection.resourceName }}
{{- end }}

{{- define "pyscheduler.leaseNamespace" -}}
{{- default .Release.Namespace .Values.leaderElection.resourceNamespace }}
{{- end }}

{{/*
The image reference: repository@digest, or repository:tag (tag defaulting to appVersion).
*/}}
{{- define "pyscheduler.image" -}}
{{- if .Values.image.digest }}
{{- printf "%s@%s" .Values.image.repository .Values.image.digest }}
{{- else }}
{{- printf "%s:%s" .Values.image.repository (default .Chart.AppVersion .Values.image.tag) }}
{{- end }}
{{- end }}

{{/*
Series selector of the alerts.
*/}}
{{- define "pyscheduler.alertSelector" -}}
{{- default (printf "job=\"%s\",namespace=\"%s\"" (include "pyscheduler.fullname" .) .Release.Namespace) .Values.prometheusRule.selector }}
{{- end }}

{{/*
The KubeSchedulerConfiguration, as YAML.
*/}}
{{- define "pyscheduler.schedulerConfig" -}}
{{- $c := .Values.schedulerConfig -}}
{{- $main := dict "schedulerName" .Values.schedulerName -}}
{{- with $c.plugins }}{{ $_ := set $main "plugins" . }}{{ end -}}
{{- with $c.pluginConfig }}{{ $_ := set $main "pluginConfig" . }}{{ end -}}
{{- $profiles := prepend $c.extraProfiles $main -}}
{{- $le := dict
  "leaderElect" (eq (include "pyscheduler.leaderElect" .) "true")
  "leaseDuration" .Values.leaderElection.leaseDuration
  "renewDeadline" .Values.leaderElection.renewDeadline
  "retryPeriod" .Values.leaderElection.retryPeriod
  "resourceLock" "leases"
  "resourceName" (include "pyscheduler.leaseName" .)
  "resourceNamespace" (include "pyscheduler.leaseNamespace" .)
-}}
{{- $cfg := dict
  "apiVersion" "kubescheduler.config.k8s.io/v1"
  "kind" "KubeSchedulerConfiguration"
  "percentageOfNodesToScore" $c.percentageOfNodesToScore
  "podInitialBackoffSeconds" $c.podInitialBackoffSeconds
  "podMaxBackoffSeconds" $c.podMaxBackoffSeconds
  "parallelism" $c.parallelism
  "clientConnection" $c.clientConnection
  "leaderElection" $le
  "profiles" $profiles
-}}
{{- toYaml $cfg }}
{{- end }}

{{/*
RBAC subjects from a values list ({kind, name, namespace, apiGroup}): a ServiceAccount defaults to the release
namespace, a User or Group to the rbac.authorization.k8s.io group. Call with (dict "subjects" LIST "root" $).
*/}}
{{- define "pyscheduler.rbacSubjects" -}}
{{- range .subjects }}
- kind: {{ .kind }}
  name: {{ .name }}
  {{- if eq .kind "ServiceAccount" }}
  namespace: {{ default $.root.Release.Namespace .namespace }}
  {{- else }}
  apiGroup: {{ default "rbac.authorization.k8s.io" .apiGroup }}
  {{- end }}
{{- end }}
{{- end }}
